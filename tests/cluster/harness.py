"""What the cluster tier's fault tests share: services kept running as the stack's supervisor
keeps them (restarted whenever they exit), the brokers that matter found by their role, and
the exactly-once check with the firing figures (lateness of each slot) read from the topics."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.integration.timer_harness import ServiceProcess, occurrence_counts
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name

RESTART_AFTER_S = 0.5
API_UP_WITHIN_S = 90.0


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
    jobs = set(job_ids)
    emitted = [(r, at) for r, at in requests_with_emission(bootstrap) if r["job_id"] in jobs]
    counts = occurrence_counts([request for request, _ in emitted])
    expected = {(job, slot) for job in jobs for slot in slots if slot <= until_ms}
    late = [
        at - r["scheduled_time"]
        for r, at in emitted
        if (r["job_id"], r["scheduled_time"]) in expected
    ]
    return Firing(
        missing=sorted(expected - set(counts)),
        duplicated=sorted(k for k, n in counts.items() if n > 1),
        latest_ms=max(late, default=0),
    )


def windows(
    bootstrap: str, job_ids: Iterable[str], marks: list[tuple[str, int]], until_ms: int
) -> list[str]:
    """For each fault (`marks`: what happened, when), over the slots due from it until the next
    mark: the longest any slot waited past its time (the gap in firing the fault caused), and
    how long after the fault the last slot more than 2 s late was emitted (the time until
    the timers served every partition on time again; 0 when none was that late)."""
    wanted = set(job_ids)
    emitted = [
        (r["scheduled_time"], at)
        for r, at in requests_with_emission(bootstrap)
        if r["job_id"] in wanted
    ]
    lines = []
    bounds = [*(at for _, at in marks[1:]), until_ms]
    for (what, start), end in zip(marks, bounds, strict=True):
        inside = [(slot, at) for slot, at in emitted if start <= slot < end]
        gap = max((at - slot for slot, at in inside), default=0)
        late = [at for slot, at in inside if at - slot > 2000]
        back = max(late, default=start) - start
        lines.append(
            f"{what}: longest gap {gap / 1000:.1f} s, on time again after {back / 1000:.1f} s"
        )
    return lines


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


@dataclass
class AcknowledgedWrites:
    """Job creates sent to the API process (`POST /jobs`, which the single writer judges) on
    a thread, one a second: the ids the API answered 201 for, and how many it did not (an
    error, a 202 whose verdict was late, no answer while it or a broker was down: the caller
    was told, nothing was promised)."""

    bootstrap: str
    api: str  # the API's base URL
    acknowledged: list[str] = field(default_factory=list)
    unacknowledged: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        deadline = time.monotonic() + API_UP_WITHIN_S
        while not self._healthy():
            assert time.monotonic() < deadline, f"the API did not answer within {API_UP_WITHIN_S} s"
            time.sleep(0.5)
        self._thread = threading.Thread(target=self._write, daemon=True)
        self._thread.start()

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.api}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def _write(self) -> None:
        n = 0
        while not self._stop.wait(1.0):
            n += 1
            job_id = f"api-write-{n:04d}"
            # A day ahead: the job exists, and fires nothing while the test runs.
            run_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
            try:
                answer = httpx.post(
                    f"{self.api}/jobs",
                    timeout=30,
                    json={"jobId": job_id, "type": "noop", "runAt": run_at},
                )
            except httpx.HTTPError:
                self.unacknowledged += 1
                continue
            if answer.status_code != 201:
                self.unacknowledged += 1
                continue
            self.acknowledged.append(job_id)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)

    def lost(self) -> list[str]:
        """Acknowledged creates whose definition is not on jobs.definitions."""
        live: dict[str, bool] = {}
        for record in read_to_end(topic_name("jobs.definitions"), None, self.bootstrap):
            if record.key is not None:
                live[record.key] = record.value is not None
        return [job_id for job_id in self.acknowledged if not live.get(job_id)]
