"""The faust-streaming example consumer (`tickwheel.streams.completions`) against the real
broker: it sees every succeeded execution of a real run (timer → worker) and every finished
workflow, each once in its own output — across a restart that redelivers what it had not
committed — and dead-letters a record that is not a tickwheel record while it keeps going."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import (
    ServiceProcess,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

JOBS = 6


class FaustWorker:
    """`python -m tickwheel.streams.completions worker --without-web` as a real process."""

    def __init__(self, log_path: Path, env: dict[str, str]) -> None:
        self.log_path, self.env = log_path, env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tickwheel.streams.completions", "worker",
                 "--without-web", "-l", "warn"],
                stdout=log, stderr=subprocess.STDOUT, env=self.env,
            )  # fmt: skip

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def _outputs(bootstrap: str) -> list[dict[str, Any]]:
    return [
        json.loads(r.value)
        for r in read_to_end(topic_name("streams.completions"), None, bootstrap)
        if r.value is not None
    ]


def _workflow_event(workflow_id: str, seq: int, event_type: str) -> dict[str, Any]:
    return {
        "event_id": f"{workflow_id}:{seq}",
        "event_time": 1_800_000_000_000 + seq,
        "workflow_id": workflow_id,
        "definition_id": "payout",
        "definition_version": 1,
        "event_type": event_type,
        "step_id": None,
        "attempt": 0,
        "data": None,
    }


def _publish_workflows(bootstrap: str, ids: list[str], *, redeliver: bool) -> None:
    producer = EventProducer(bootstrap)
    for workflow_id in ids:
        events = ["workflow_started", "step_scheduled", "workflow_succeeded"]
        if redeliver:  # an event written twice (a producer retry): answered once all the same
            events.append("workflow_succeeded")
        for seq, kind in enumerate(events):
            producer.send(
                topic_name("workflows.events"), workflow_id,
                encode("WorkflowEvent", _workflow_event(workflow_id, seq, kind)),
            )  # fmt: skip
    producer.flush()


def test_every_completion_is_answered_once_across_a_restart(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_LEASE_SECONDS="5",
    )
    consumer = FaustWorker(tmp_path / "faust.log", env)
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker", ("--concurrency", "4"))
    now_ms = int(time.time() * 1000)
    publish_jobs(
        kafka_bootstrap,
        [
            {"jobId": f"tick-{i}", "type": "noop", "cron": "* * * * * *", "jitter": "0s"}
            for i in range(JOBS)
        ],
        now_ms,
    )
    first = [f"wf-a-{i}" for i in range(5)]
    second = [f"wf-b-{i}" for i in range(5)]
    _publish_workflows(kafka_bootstrap, first, redeliver=True)
    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("executions.events"), "junk", b"\x00not a tickwheel record")
    producer.flush()

    def succeeded() -> set[str]:
        ids = set()
        for record in read_to_end(topic_name("executions.events"), None, kafka_bootstrap):
            if record.key == "junk" or record.value is None:
                continue  # the one record here that is not a tickwheel record
            event = decode(record.value, "ExecutionEvent")[1]
            if event["event_type"] == "succeeded":
                ids.add(event["execution_id"])
        return ids

    def answered(kind: str) -> Counter[str]:
        assert consumer.process is not None and consumer.process.poll() is None, (
            consumer.log_path.read_text()[-3000:]
        )
        return Counter(o["id"] for o in _outputs(kafka_bootstrap) if o["kind"] == kind)

    timer.start()
    worker.start()
    consumer.start()
    try:
        assert wait_until(lambda: len(succeeded()) >= 3 * JOBS, 90), "the run did not run"
        assert wait_until(lambda: set(first) <= set(answered("workflow")), 90), (
            consumer.log_path.read_text()[-3000:]
        )
        # A restart: the consumer group rebalances and redelivers what was not committed.
        consumer.stop()
        _publish_workflows(kafka_bootstrap, second, redeliver=False)
        consumer.start()
        assert wait_until(lambda: len(succeeded()) >= 6 * JOBS, 90)
        # The run stops; everything it recorded must be answered.
        worker.stop()
        timer.stop()
        expected = succeeded()
        assert wait_until(lambda: expected <= set(answered("execution")), 90), (
            consumer.log_path.read_text()[-3000:]
        )
        assert wait_until(lambda: set(first + second) <= set(answered("workflow")), 60)
    finally:
        consumer.stop()
        worker.stop()
        timer.stop()

    outputs = _outputs(kafka_bootstrap)
    executions = Counter(o["id"] for o in outputs if o["kind"] == "execution")
    workflows = Counter(o["id"] for o in outputs if o["kind"] == "workflow")
    assert set(executions) == expected  # nothing answered that did not succeed
    assert set(workflows) == set(first + second)
    assert [i for i, n in (executions + workflows).items() if n > 1] == []
    letters = [
        decode(r.value, "DeadLetter")[1]
        for r in read_to_end(topic_name("executions.dlq"), None, kafka_bootstrap)
        if r.value is not None
    ]
    assert [(d["job_id"], d["source_topic"]) for d in letters] == [
        ("junk", topic_name("executions.events"))
    ]
    assert letters[0]["reason"].startswith("undecodable")
