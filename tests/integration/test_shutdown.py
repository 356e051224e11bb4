"""Every service stops within a bound on SIGTERM, whatever state its broker is in.

Each test runs a private broker (so that it can be stopped or frozen without touching the
session's), a worker with attempts in flight, the history sink and a timer as real processes, takes the
broker away, then sends SIGTERM and times the exit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.admin import apply_topology
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.stack.broker import BrokerConfig, LocalKafka
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

# No handler is running at SIGTERM (noop jobs), so only Kafka's share of a stop is owed.
STOP_BOUND_S = 15.0


def request(job_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    execution_id = str(uuid.uuid4())
    at = int(time.time() * 1000)
    return {
        "execution_id": execution_id, "job_id": f"job-{execution_id[:8]}", "job_version": 1,
        "job_type": job_type, "tenant_id": "acme", "priority": "normal", "attempt": 1,
        "scheduled_time": at, "fire_time": at, "period_start": at, "period_end": None,
        "payload": json.dumps(payload), "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": at, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalKafka]:
    kafka = LocalKafka(BrokerConfig.on_free_ports(tmp_path / "kafka"))
    kafka.start(timeout=120)
    try:
        yield kafka
    finally:
        if kafka.process is not None and kafka.process.poll() is None:
            kafka.process.send_signal(signal.SIGCONT)
        kafka.stop()


class Services:
    def __init__(self, tmp_path: Path, bootstrap: str, prefix: str) -> None:
        self.tmp_path = tmp_path
        self.env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
                    "TICKWHEEL_TOPIC_PREFIX": prefix,
                    "TICKWHEEL_HISTORY_DIR": str(tmp_path / "history")}  # fmt: skip
        self.env.pop("CLICKHOUSE_URL", None)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, module: str) -> None:
        with (self.tmp_path / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", module, "--instance", name],
                stdout=log, stderr=subprocess.STDOUT, env=self.env,
            )  # fmt: skip

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def wait_for(self, name: str, action: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if f'"action": "{action}"' in self.log(name):
                return
            assert self.processes[name].poll() is None, self.log(name)[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"{name} never logged {action}:\n{self.log(name)[-3000:]}")

    def kill_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)


def _wait_for_a_success(bootstrap: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in read_to_end(topic_name("executions.events"), None, bootstrap):
            if record.value and decode(record.value, "ExecutionEvent")[1]["event_type"] == (
                "succeeded"
            ):
                return True
        time.sleep(0.2)
    return False


@pytest.fixture
def services(tmp_path: Path, broker: LocalKafka) -> Iterator[Services]:
    prefix = f"t{uuid.uuid4().hex[:10]}."
    running = Services(tmp_path, broker.bootstrap, prefix)
    os.environ["TICKWHEEL_TOPIC_PREFIX"], previous = (
        prefix,
        os.environ.get("TICKWHEEL_TOPIC_PREFIX"),
    )
    try:
        apply_topology(bootstrap=broker.bootstrap)
        running.start("worker", "tickwheel.services.worker")
        running.start("history", "tickwheel.services.history")
        running.start("timer", "tickwheel.services.timer")
        running.wait_for("worker", "worker_started")
        running.wait_for("history", "history_sink_started")
        running.wait_for("timer", "partition_restored")
        # Attempts in flight: leases and outcomes queued, offsets to commit, a group to leave.
        producer = EventProducer(broker.bootstrap)
        for _ in range(3000):
            r = request("noop", {})
            producer.send(
                topic_name("executions.normal"), r["job_id"], encode("ExecutionRequest", r)
            )
        producer.flush()
        # The worker logs no line per execution (the history is the record): read its events.
        assert _wait_for_a_success(broker.bootstrap, 60), running.log("worker")[-3000:]
        yield running
    finally:
        running.kill_all()
        if previous is None:
            os.environ.pop("TICKWHEEL_TOPIC_PREFIX", None)
        else:
            os.environ["TICKWHEEL_TOPIC_PREFIX"] = previous


def take_away(broker: LocalKafka, how: str) -> None:
    assert broker.process is not None
    if how == "stopped":
        broker.stop()
    else:  # frozen: connections stay open, nothing answers (a hung or partitioned broker)
        broker.process.send_signal(signal.SIGSTOP)


@pytest.mark.parametrize("how", ["stopped", "frozen"])
def test_services_exit_within_the_bound_when_their_broker_is_gone(
    broker: LocalKafka, services: Services, how: str
) -> None:
    take_away(broker, how)
    time.sleep(2)  # the clients notice, and start retrying
    for name, process in services.processes.items():
        assert process.poll() is None, (
            f"{name} exited before SIGTERM:\n{services.log(name)[-3000:]}"
        )
    started = time.monotonic()
    for process in services.processes.values():
        process.send_signal(signal.SIGTERM)
    took: dict[str, float] = {}
    for name, process in services.processes.items():
        try:
            process.wait(max(0.1, STOP_BOUND_S - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name} still running {STOP_BOUND_S}s after SIGTERM")
        took[name] = time.monotonic() - started
    assert max(took.values()) <= STOP_BOUND_S, took
    for name in services.processes:
        assert "Traceback" not in services.log(name), services.log(name)[-3000:]
