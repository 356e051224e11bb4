"""Helpers for driving real timer-service processes against the real broker in tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.jobs import validate_job
from tickwheel.topology import topic_name


@dataclass
class ServiceProcess:
    """One real tickwheel service process (`python -m tickwheel.services.<service>`)."""

    name: str
    log_path: Path
    env: dict[str, str]
    service: str = "timer"
    args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"tickwheel.services.{self.service}",
                "--instance",
                self.name,
                *self.args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        log.close()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


TimerProcess = ServiceProcess


def timer_env(bootstrap: str, prefix: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "TICKWHEEL_TOPIC_PREFIX": prefix,
        "TICKWHEEL_TIMER_TICK_MS": "50",
        **extra,
    }


def publish_jobs(bootstrap: str, specs: list[dict[str, Any]], now_ms: int) -> list[dict[str, Any]]:
    """Validate and publish definitions in one go (the SDK's per-job existence check is for
    people, not for hundreds of jobs in a test)."""
    producer = EventProducer(bootstrap)
    records = []
    for spec in specs:
        record = validate_job(spec, now_ms)
        producer.send(
            topic_name("jobs.definitions"), record["jobId"], encode("JobDefinition", record)
        )
        records.append(record)
    producer.flush()
    return records


def emitted_requests(bootstrap: str) -> list[dict[str, Any]]:
    """Every execution request committed to any executions.<priority> topic."""
    requests = []
    for priority in ("high", "normal", "low"):
        for record in read_to_end(topic_name(f"executions.{priority}"), None, bootstrap):
            assert record.value is not None
            requests.append(decode(record.value, "ExecutionRequest")[1])
    return requests


def occurrence_counts(requests: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    return Counter((r["job_id"], r["scheduled_time"]) for r in requests if r["trigger"] != "manual")


def every_job_reached(bootstrap: str, job_ids: list[str], slot_ms: int) -> bool:
    """True once every job has an emitted occurrence at or after `slot_ms`."""
    newest: dict[str, int] = {}
    for job_id, slot in occurrence_counts(emitted_requests(bootstrap)):
        newest[job_id] = max(slot, newest.get(job_id, 0))
    return all(newest.get(job_id, 0) >= slot_ms for job_id in job_ids)


def wait_until(predicate: Any, timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def execution_events(bootstrap: str) -> list[dict[str, Any]]:
    return [
        decode(r.value, "ExecutionEvent")[1]
        for r in read_to_end(topic_name("executions.events"), None, bootstrap)
        if r.value is not None
    ]
