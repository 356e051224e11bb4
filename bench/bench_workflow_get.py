"""What reading one workflow instance (`WorkflowsClient.get`) costs as its partition fills with
other instances' history (issue 33: "a `get` whose cost does not grow with other instances'
events"; decision 0218).

On a throwaway local broker, a code workflow instance's real records (its events and its
snapshot, made by the orchestrator's own fold and record functions) are written after a
growing number of other records on the same topics. Each round reads the instance three ways:

- `get` as it is: its partitions read back from the end (`read_back`);
- the whole-partition read `get` did before (every event and snapshot of the partition
  decoded, the instance's kept), on the same data;
- the raw limit: the events partition consumed to its end, nothing decoded.

The instance written last is the usual question (a recent instance); one written before all
the others is the worst case, where reading back reaches the beginning.

    python bench/bench_workflow_get.py [--others 0,50000,200000,600000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._charts import points  # noqa: E402
from bench._common import Report, bench_broker  # noqa: E402
from tickwheel.adapters.avro import encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.client import Consumer, TopicPartition  # noqa: E402
from tickwheel.adapters.kafka.config import consumer_config  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.adapters.kafka.reader import read_to_end, watermarks  # noqa: E402
from tickwheel.core.codeflow.definition import CodeWorkflowDefinition  # noqa: E402
from tickwheel.core.codeflow.kind import CodeKind  # noqa: E402
from tickwheel.core.workflow.inputs import Start  # noqa: E402
from tickwheel.sdk.workflows import WorkflowsClient  # noqa: E402
from tickwheel.services.orchestrator.records import event_record, snapshot_record  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402

ROUNDS = 3


def instance_records(workflow_id: str, now_ms: int) -> tuple[list[bytes], bytes]:
    """A started code workflow instance's event records and its snapshot, as the
    orchestrator writes them."""
    kind = CodeKind()
    definition = CodeWorkflowDefinition("bench_get", 1, "code-v1")
    state = kind.initial(workflow_id, definition)
    state, events, statuses = kind.decide(state, definition, Start(now_ms, {"n": 1}))
    values = [
        encode("WorkflowEvent", event_record(state, event, "in-1", None, status=status))
        for event, status in zip(events, statuses, strict=True)
    ]
    return values, encode("WorkflowSnapshot", snapshot_record(state, now_ms))


def client_state_topic() -> str:
    return topic_name("workflows.state")  # the snapshots (WorkflowsClient.state_topic)


def write(producer: EventProducer, workflow_id: str, now_ms: int) -> None:
    events, snapshot = instance_records(workflow_id, now_ms)
    for value in events:
        producer.send(topic_name("workflows.events"), workflow_id, value)
    producer.send(client_state_topic(), workflow_id, snapshot)


def write_others(producer: EventProducer, count: int, now_ms: int) -> None:
    """`count` other instances' records: their events and a snapshot each (the bytes of one
    instance's, under other keys: a reader keys on the record key)."""
    events, snapshot = instance_records("other", now_ms)
    for _ in range(count):
        key = f"other-{uuid.uuid4().hex[:12]}"
        for value in events:
            producer.send(topic_name("workflows.events"), key, value)
        producer.send(client_state_topic(), key, snapshot)
    producer.flush(300)


def timed(read: Callable[[], object]) -> float:
    """The median of `ROUNDS` calls of `read`, in milliseconds."""
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        read()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def whole_partition(client: WorkflowsClient, workflow_id: str) -> None:
    """What `get` read before decision 0218: every record of both partitions, decoded."""
    partition = client._partition(workflow_id)
    events = client._read_events([partition]).get(workflow_id, [])
    snapshot = client._snapshots(partition).get(workflow_id)
    assert events and snapshot is not None


def raw_partition(client: WorkflowsClient, bootstrap: str, workflow_id: str) -> None:
    for _record in read_to_end(client.events_topic, [client._partition(workflow_id)], bootstrap):
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--others",
        default="0,50000,200000,600000",
        help="cumulative counts of other instances written before each round",
    )
    parser.add_argument("--report", default="workflow-get.md")
    args = parser.parse_args()
    steps = [int(n) for n in args.others.split(",")]

    report = Report("Reading one workflow instance as its partition fills (`WorkflowsClient.get`)")
    new_ms: list[float] = []
    old_ms: list[float] = []
    first_ms: list[float] = []
    sizes: list[float] = []
    with bench_broker() as broker:
        bootstrap = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"wfg{uuid.uuid4().hex[:6]}."
        apply_topology(bootstrap=bootstrap)
        producer = EventProducer(bootstrap, **{"linger.ms": 50, "batch.num.messages": 10000})
        client = WorkflowsClient(bootstrap)
        now = int(time.time() * 1000)
        first = "bench-first"
        write(producer, first, now)  # written before everything else: the worst case
        written = 0
        for target in steps:
            write_others(producer, target - written, now)
            written = target
            latest = f"bench-latest-{target}"
            write(producer, latest, now)
            producer.flush(60)
            partition = client._partition(latest)
            low, high = client_watermarks(bootstrap, client.events_topic, partition)
            assert client.get(latest).status == "running"
            new = timed(lambda w=latest: client.get(w))
            old = timed(lambda w=latest: whole_partition(client, w))
            raw = timed(lambda w=latest: raw_partition(client, bootstrap, w))
            worst = timed(lambda: client.get(first))
            new_ms.append(new)
            old_ms.append(old)
            first_ms.append(worst)
            sizes.append(high - low)
            report.add(
                f"- {target:,} other instances written ({high - low:,} records on the instance's "
                f"events partition): `get` of the latest instance **{new:.0f} ms**; the whole-"
                f"partition read it replaced {old:.0f} ms; raw read of that partition to its "
                f"end {raw:.0f} ms; `get` of the instance written first {worst:.0f} ms"
            )
    report.add("")
    report.add(
        f"Each figure is the median of {ROUNDS} reads, one process, the broker on the same machine."
    )
    report.add("")
    chart = points(
        {
            "get, latest instance (reads back)": (sizes, new_ms),
            "whole-partition read (before)": (sizes, old_ms),
            "get, first instance (worst case)": (sizes, first_ms),
        },
        "workflow-get.png",
        "Reading one instance as its partition fills",
        "records on the instance's events partition",
        "ms (median)",
    )
    report.add(f"![get against partition size]({chart})")
    report.write(args.report)


def client_watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer(consumer_config(f"bench-meta-{uuid.uuid4()}", bootstrap))
    try:
        return watermarks(consumer, TopicPartition(topic, partition))
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
