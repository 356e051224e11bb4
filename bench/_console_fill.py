"""The console benchmark's data: a fleet of jobs and their last executions, and 30 days of a
per-minute job's history, written into a real embedded chDB (`bench/bench_console.py`); its
events and reader are the console tests' (`tests/console/history_rows.py`)."""

from __future__ import annotations

from typing import Any

from tests.console.fakes import MemoryJobs
from tests.console.history_rows import execution_event
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.clock import FakeClock
from tickwheel.services.history.rows import Source, execution_event_row, job_definition_row

NOW_S = 4_076_000_000.0  # 2099: no retention expires the rows
MINUTE_MS = 60_000
CRONS = ["0 2 * * *", "*/5 * * * *", "0 * * * *", "30 9 * * 1-5", "0 0 1 * *", "15 3 * * 0"]


def _insert(store: ChdbHistoryStore, events: list[dict[str, Any]], source: Source) -> None:
    rows = [execution_event_row(event, source) for event in events]
    for start in range(0, len(rows), 20_000):
        store.insert("execution_events", rows[start : start + 20_000])


def fill_fleet(store: ChdbHistoryStore, jobs: MemoryJobs, per_job: int) -> int:
    """Every other job's last `per_job` executions (each 7th job's newest one failed, so the
    jobs page has outcomes to fold and late chips to show); the rows written."""
    now_ms, events = int(NOW_S * 1000), []
    for n, record in enumerate(r for r in jobs.list() if r["jobId"] != "per-minute"):
        for k in range(per_job):
            slot, execution = now_ms - (k + 1) * 3_600_000 - n, f"x-{n}-{k}"
            last = "failed" if n % 7 == 0 and k == 0 else "succeeded"
            events.append(execution_event(record["jobId"], execution, "requested", slot, slot + 40))
            events.append(execution_event(record["jobId"], execution, last, slot, slot + 900))
    _insert(store, events, Source("bench", 0, 0, now_ms))
    return len(events)


def fill_history(store: ChdbHistoryStore, jobs: MemoryJobs, days: int) -> int:
    """A per-minute job created `days` ago, every slot fired and succeeded but a few."""
    now_ms = int(NOW_S * 1000)
    created = now_ms - days * 86_400_000 - MINUTE_MS // 2
    jobs.clock = FakeClock(created / 1000)
    record = jobs.create({"jobId": "per-minute", "type": "noop", "cron": "* * * * *"})
    jobs.clock = FakeClock(NOW_S)
    source = Source("bench", 0, 0, created)
    store.insert("job_definitions", [job_definition_row(record, source)])
    first = (created // MINUTE_MS + 1) * MINUTE_MS
    slots = list(range(first, now_ms, MINUTE_MS))
    missing = set(slots[100::9000])
    events = []
    for slot in slots:
        if slot not in missing:
            events.append(
                execution_event("per-minute", f"exec-{slot}", "requested", slot, slot + 40)
            )
            events.append(
                execution_event("per-minute", f"exec-{slot}", "succeeded", slot, slot + 900)
            )
    _insert(store, events, source)
    return len(missing)
