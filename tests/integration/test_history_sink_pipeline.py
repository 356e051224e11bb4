"""Reconciliation through the real pipeline: jobs published to the real broker, fired by a real
timer process, run by a real worker process, recorded by the history sink — and every
execution the timer requested is in `execution_events` with its events in order, a terminal
outcome, and the lateness the request itself implies.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.clickhouse import HistorySettings
from tickwheel.history import execution_timeline, open_history_reader, run_query
from tickwheel.services.history.settings import HistorySinkSettings

from .history_reference import quantile_exact
from .history_scenario import EPOCH, iso
from .history_sink_running import sink_in_thread
from .timer_harness import TimerProcess, emitted_requests, publish_jobs, timer_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(200)]

LIFE = re.compile(r"^requested leased( heartbeat)* succeeded$")


def terminal_count(reader: Any, execution_ids: list[str]) -> int:
    result = reader.query(
        "SELECT uniqExact(execution_id) FROM execution_events FINAL "
        "WHERE event_type = 'succeeded' AND has({ids:Array(String)}, execution_id)",
        {"ids": execution_ids},
    )
    return int(result.scalar())


def test_every_fired_occurrence_reconciles_with_the_history(
    applied_topology: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    now_ms = int(time.time() * 1000)
    first = now_ms + 6_000
    specs: list[dict[str, Any]] = [
        {"jobId": f"once-{n}", "type": "noop", "runAt": iso(first + n * 700), "tenantId": "acme"}
        for n in range(3)
    ] + [
        {"jobId": "sleepy", "type": "sleep", "payload": {"seconds": 1.5},
         "runAt": iso(first + 1_000), "tenantId": "globex"},
        {"jobId": "every-2s", "type": "noop", "cron": "*/2 * * * * *", "timezone": "UTC",
         "jitter": "1s", "tenantId": "globex"},
    ]  # fmt: skip
    cutoff = first + 6_000  # occurrences reconciled: those scheduled up to here
    settings = HistorySinkSettings(
        instance="history-test",
        bootstrap=kafka_bootstrap,
        group_id=f"history-pipeline-{uuid.uuid4().hex[:8]}",
        max_wait_ms=50,
        history=HistorySettings(history_dir=tmp_path / "history"),
    )
    timer = TimerProcess(
        "timer-1", tmp_path / "timer.log", timer_env(kafka_bootstrap, applied_topology)
    )
    worker_log = (tmp_path / "worker.log").open("ab")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tickwheel.services.worker", "--instance", "w1", "--concurrency", "4"],
        stdout=worker_log, stderr=subprocess.STDOUT,
        env=timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_WORKER_SHUTDOWN_GRACE_S="1"),
    )  # fmt: skip
    worker_log.close()
    try:
        with sink_in_thread(settings):
            timer.start()
            publish_jobs(kafka_bootstrap, specs, now_ms)

            def due_requests() -> list[dict[str, Any]]:
                return [
                    r for r in emitted_requests(kafka_bootstrap)
                    if r["scheduled_time"] <= cutoff and r["attempt"] == 1
                ]  # fmt: skip

            expected_count = 4 + len(range(now_ms // 2000 * 2000 + 2000, cutoff + 1, 2000))
            assert wait_until(lambda: len(due_requests()) >= expected_count, 60), (
                timer.log_path.read_text()[-3000:]
            )
            requests = {r["execution_id"]: r for r in due_requests()}
            reader = open_history_reader(settings.history)
            ids = sorted(requests)
            assert wait_until(lambda: terminal_count(reader, ids) == len(ids), 60), (
                tmp_path / "worker.log"
            ).read_text()[-3000:]

            for execution_id, request in requests.items():
                timeline = execution_timeline(reader, execution_id)
                kinds = " ".join(e["event_type"] for e in timeline["events"])
                assert LIFE.match(kinds), (execution_id, kinds)
                assert timeline["outcome"] == "succeeded"
                assert timeline["scheduled_time"] == iso(request["scheduled_time"])
                assert timeline["fire_time"] == iso(request["fire_time"])
                assert timeline["requested_at"] == iso(request["requested_at"])
                assert timeline["lateness_ms"] == request["requested_at"] - request["fire_time"]
                assert timeline["jitter_ms"] == request["fire_time"] - request["scheduled_time"]
                assert timeline["job_version"] == request["job_version"]
                attempt = timeline["attempts"][0]
                assert attempt["trigger"] == request["trigger"] and attempt["accepted"] is True
                assert attempt["worker_id"] and attempt["lease_deadline"]

            # The fire-lateness query agrees with the requests themselves. The window on
            # fire_time holds exactly the reconciled occurrences: the cron job's next slot
            # after them fires later than the last one's slot plus its (under 1 s) jitter.
            groups: dict[tuple[str, dt.datetime], list[int]] = {}
            for request in requests.values():
                hour = request["fire_time"] // 3_600_000 * 3_600_000
                groups.setdefault(
                    (request["job_type"], EPOCH + dt.timedelta(milliseconds=hour)), []
                ).append(request["requested_at"] - request["fire_time"])
            fires = [r["fire_time"] for r in requests.values()]
            window = {"since": iso(min(fires)), "until": iso(max(fires) + 1)}
            answer = run_query(reader, "fire_lateness", window).rows
            assert [(row[0], row[1], row[2], row[4], row[5], row[6]) for row in answer] == [
                (job_type, hour, len(values), quantile_exact(values, 0.5),
                 quantile_exact(values, 0.99), max(values))
                for (job_type, hour), values in sorted(groups.items())
            ]  # fmt: skip
    finally:
        timer.stop()
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
