"""After the jobs group grew from 6 to 12 partitions (decision 0211), an input that sits on a
partition that no longer owns its workflow (written before the resize, or by a producer with
old metadata) is not folded there: the orchestrator's loop, on the in-memory Kafka, forwards it
unchanged to its owner in the transaction that moves the checkpoint past it, the owner folds
it, and neither a failed transaction nor a restart forwards it twice."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tests.unit.services.orchestrator.test_orchestrator_pruning import ONE_STEP, T0
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import owner_partition
from tickwheel.clock import FakeClock
from tickwheel.core.workflow import Start
from tickwheel.core.workflow.wire import input_record
from tickwheel.ports.kafka import ReadRecord
from tickwheel.runtime import partitions as partitions_module
from tickwheel.services.orchestrator.records import checkpoint_key
from tickwheel.services.orchestrator.service import OrchestratorService
from tickwheel.services.orchestrator.settings import OrchestratorSettings
from tickwheel.topology import load_topology, topic_name

DECLARED, RESIZED = 6, 12
HEADERS = [("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]


def moved_workflow() -> tuple[str, int, int]:
    """A workflow id whose partition under the declared count is not its owner after the
    resize: (id, where a stale producer put it, its owner)."""
    for i in range(100):
        workflow_id = f"order-{i}"
        old, new = partition_for(workflow_id, DECLARED), owner_partition(workflow_id, RESIZED)
        if old != new:
            return workflow_id, old, new
    raise AssertionError("no workflow id moves")


class Cluster:
    """The in-memory Kafka with the jobs group resized to 12 partitions."""

    def __init__(self) -> None:
        self.clock = FakeClock(T0 / 1000)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(
            replace(spec, partitions=RESIZED) if spec.co_partition == "jobs" else spec
            for spec in load_topology()
        )
        self.clients = MemoryClients(self.broker)
        self.inputs = topic_name("workflows.inputs")

    def orchestrator(self, instance: str, adopt: bool = True) -> OrchestratorService:
        settings = OrchestratorSettings(instance=instance, bootstrap="memory", group_id="orch")
        service = OrchestratorService(settings, clock=self.clock, clients=self.clients)
        service.catalog.add(
            {
                "definition_id": "one",
                "version": 1,
                "body": json.dumps(ONE_STEP),
                "published_at": 0,
                "published_by": None,
            }
        )
        assert service.partition_count == DECLARED  # the declared count until it adopts
        if adopt:
            service.adopt_partition_count(RESIZED)  # as run() does with the cluster's count
        service.start()
        # Bounded: restores run on their own thread; the fake answers at once.
        self.run(service, lambda: len(service.partitions) == RESIZED, "all partitions restored")
        return service

    def run(self, service: OrchestratorService, done: Callable[[], bool], what: str) -> None:
        for _ in range(2000):
            service.step()
            service._settle()  # each turn's transactions end before the test looks
            if done():
                return
            threading.Event().wait(0.002)
        raise AssertionError(f"not reached: {what}")

    def start_input(self, workflow_id: str, partition: int) -> bytes:
        """A start, written to `partition` as a producer with old metadata placed it."""
        value = encode(
            "WorkflowInput",
            input_record(
                workflow_id, Start(T0, None), "in-1", definition_id="one", definition_version=1
            ),
        )
        producer = self.clients.transactional("stale-producer")
        producer.init()
        producer.begin()
        producer.send(self.inputs, workflow_id, value, partition=partition, headers=HEADERS)
        producer.commit()
        return value

    def read(self, name: str, key: Callable[[str], bool]) -> list[ReadRecord]:
        return [
            r
            for r in self.clients.reader().read_to_end(topic_name(name))
            if r.key is not None and key(r.key)
        ]

    def snapshots(self, workflow_id: str) -> dict[int, dict[str, Any]]:
        """The workflow's latest snapshot on each partition of workflows.state holding one."""
        return {
            r.partition: decode(r.value or b"", "WorkflowSnapshot")[1]
            for r in self.read("workflows.state", lambda k: k == workflow_id)
        }

    def checkpoint(self, partition: int) -> int:
        [*_, last] = self.read("workflows.state", lambda k: k == checkpoint_key(partition))
        offsets = decode(last.value or b"", "WorkflowSnapshot")[1]["input_offsets"]
        return int(offsets[self.inputs])

    def started(self, workflow_id: str) -> int:
        events = [
            decode(r.value or b"", "WorkflowEvent")[1]
            for r in self.read("workflows.events", lambda k: k == workflow_id)
        ]
        return sum(1 for e in events if e["event_type"] == "workflow_started")


def assert_forwarded_once(
    cluster: Cluster, workflow_id: str, old: int, new: int, value: bytes
) -> None:
    copies = cluster.read("workflows.inputs", lambda k: k == workflow_id)
    assert sorted((r.partition, r.offset) for r in copies) == sorted([(old, 0), (new, 0)])
    [forwarded] = [r for r in copies if r.partition == new]
    assert (forwarded.value, list(forwarded.headers)) == (value, HEADERS)  # unchanged
    assert list(cluster.snapshots(workflow_id)) == [new]  # folded by its owner, not on `old`
    assert cluster.snapshots(workflow_id)[new]["status"] == "running"
    assert cluster.started(workflow_id) == 1
    assert cluster.checkpoint(old) == 1  # moved past it with the forward


def test_an_input_its_partition_no_longer_owns_is_forwarded_once_and_its_owner_folds_it() -> None:
    cluster = Cluster()
    workflow_id, old, new = moved_workflow()
    service = cluster.orchestrator("orch-1")
    value = cluster.start_input(workflow_id, old)
    cluster.run(service, lambda: bool(cluster.snapshots(workflow_id)), "the instance started")
    assert_forwarded_once(cluster, workflow_id, old, new, value)
    # The step's command is keyed for the new count too: it lands on the owner's partition.
    commands = cluster.read("timers.commands", lambda k: k.startswith(f"__wf/{workflow_id}/"))
    assert commands and {r.partition for r in commands} == {new}
    assert service.metrics.inputs.labels("forwarded")._value.get() == 1

    service.stop()
    service.close()
    heir = cluster.orchestrator("orch-2")  # restores from what was committed
    for _ in range(20):
        heir.step()
        heir._settle()
    assert_forwarded_once(cluster, workflow_id, old, new, value)
    heir.stop()
    heir.close()


def test_a_forward_whose_transaction_failed_is_read_and_forwarded_again_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partitions_module, "FENCED_RECHECK_S", 0.0)  # restore at once
    cluster = Cluster()
    workflow_id, old, new = moved_workflow()
    service = cluster.orchestrator("orch-1")
    # Another owner's producer of partition `old` fences ours: the transaction that carries
    # the forward fails whole, and the partition restores from its last checkpoint.
    cluster.clients.transactional(f"{topic_name('tickwheel-orchestrator')}-p{old}").init()
    value = cluster.start_input(workflow_id, old)
    cluster.run(service, lambda: bool(cluster.snapshots(workflow_id)), "the instance started")
    fenced = service.metrics.registry.get_sample_value(
        "tickwheel_orchestrator_transactions_total", {"outcome": "fenced"}
    )
    assert fenced == 1
    assert_forwarded_once(cluster, workflow_id, old, new, value)
    service.stop()
    service.close()


def test_inputs_a_partition_owns_are_folded_there_as_before() -> None:
    cluster = Cluster()
    workflow_id, _old, new = moved_workflow()
    service = cluster.orchestrator("orch-1")
    value = cluster.start_input(workflow_id, new)
    cluster.run(service, lambda: bool(cluster.snapshots(workflow_id)), "the instance started")
    copies = cluster.read("workflows.inputs", lambda k: k == workflow_id)
    assert [(r.partition, r.value) for r in copies] == [(new, value)]
    assert list(cluster.snapshots(workflow_id)) == [new]
    assert service.metrics.inputs.labels("forwarded")._value.get() == 0
    service.stop()
    service.close()


def test_an_orchestrator_whose_count_is_older_than_the_topics_forwards_nothing_from_past_it() -> (
    None
):
    """Not adopted yet (6 of 12): an input on partition 6..11 sits where the new count puts
    it; forwarding it by the old count would send it back where a new owner forwarded it from."""
    cluster = Cluster()
    workflow_id, _old, new = moved_workflow()
    assert new >= DECLARED
    service = cluster.orchestrator("orch-1", adopt=False)
    value = cluster.start_input(workflow_id, new)
    cluster.run(service, lambda: bool(cluster.snapshots(workflow_id)), "the instance started")
    copies = cluster.read("workflows.inputs", lambda k: k == workflow_id)
    assert [(r.partition, r.value) for r in copies] == [(new, value)]
    assert list(cluster.snapshots(workflow_id)) == [new]
    service.stop()
    service.close()


def test_adopting_a_partition_count_reaches_every_place_that_holds_it() -> None:
    cluster = Cluster()
    service = cluster.orchestrator("orch-1")
    service.adopt_partition_count(24)
    assert service.partition_count == 24 and service.restorer.partitions == 24
    assert {r.orchestrator.partitions for r in service.partitions.values()} == {24}
    service.stop()
    service.close()
