"""What the cluster tier's fault tests share: services kept running as the stack's supervisor
keeps them (restarted whenever they exit), the brokers that matter found by their role, and
the exactly-once check with the firing figures (lateness of each slot) read from the topics."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.integration.timer_harness import ServiceProcess, occurrence_counts
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name

RESTART_AFTER_S = 0.5


@dataclass
class Supervised:
    """Service processes restarted whenever they exit, as `tickwheel stack up` does; each exit
    is recorded with its code."""

    processes: list[ServiceProcess]
    exits: list[tuple[str, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        for process in self.processes:
            process.start()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(RESTART_AFTER_S):
            for process in self.processes:
                assert process.process is not None
                code = process.process.poll()
                if code is not None and not self._stop.is_set():
                    self.exits.append((process.name, code))
                    process.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for process in self.processes:
            process.stop()


def requests_with_emission(bootstrap: str) -> list[tuple[dict[str, Any], int]]:
    """Every committed execution request with the time it was emitted (its record's)."""
    found = []
    for priority in ("high", "normal", "low"):
        for record in read_to_end(topic_name(f"executions.{priority}"), None, bootstrap):
            assert record.value is not None
            found.append((decode(record.value, "ExecutionRequest")[1], record.timestamp_ms))
    return found


@dataclass(frozen=True)
class Firing:
    """What the topics say of the slots in (`created_ms`, `until_ms`]."""

    missing: list[tuple[str, int]]
    duplicated: list[tuple[str, int]]
    latest_ms: int  # the latest any slot was emitted after its time: the longest gap in firing

    def figures(self) -> str:
        return f"longest gap in firing {self.latest_ms / 1000:.1f} s"


def every_two_seconds(created_ms: int, until_ms: int) -> list[int]:
    first = (created_ms // 2000 + 1) * 2000
    return list(range(first, until_ms + 1, 2000))


def firing(bootstrap: str, job_ids: Iterable[str], slots: list[int], until_ms: int) -> Firing:
    emitted = requests_with_emission(bootstrap)
    counts = occurrence_counts([request for request, _ in emitted])
    expected = {(job, slot) for job in job_ids for slot in slots if slot <= until_ms}
    late = [at - r["scheduled_time"] for r, at in emitted
            if (r["job_id"], r["scheduled_time"]) in expected]  # fmt: skip
    return Firing(
        missing=sorted(expected - set(counts)),
        duplicated=sorted(k for k, n in counts.items() if n > 1),
        latest_ms=max(late, default=0),
    )


def serving_again_s(bootstrap: str, job_ids: list[str], since_ms: int) -> float:
    """Seconds from `since_ms` until every job had fired a slot due after it (the moment the
    timers served all partitions again)."""
    newest: dict[str, int] = {}
    for request, at in requests_with_emission(bootstrap):
        if request["scheduled_time"] > since_ms and request["job_id"] in job_ids:
            newest[request["job_id"]] = min(at, newest.get(request["job_id"], at))
    if set(newest) != set(job_ids):
        return float("inf")
    return (max(newest.values()) - since_ms) / 1000


def wait_for(predicate: Any, timeout: float, interval: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
