"""The console's own history queries on a real embedded chDB, against what the inserted events
say (computed here in Python): the job page's executions are the ones with the newest events
(a backfilled old slot included), newest slot first, unchanged by a duplicated row; the job
page's one-job outcome is exactly that job's row of the jobs page's every-job outcomes,
fenced attempts left out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.history_rows import KeptOpen, execution_event
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.services.api.console import reads
from tickwheel.services.history.rows import Source, execution_event_row

pytestmark = pytest.mark.integration
MINUTE_MS = 60_000
BASE_MS = 4_076_000_000_000  # 2099: no retention expires the rows
SLOTS = 40


def event(job: str, slot: int, kind: str, at: int, attempt: int = 1) -> dict[str, Any]:
    return execution_event(job, f"{job}-exec-{slot}", kind, slot, at, attempt=attempt)


def recorded_events() -> list[dict[str, Any]]:
    """Job `a`: a slot a minute, each requested and succeeded; slot 3 re-run long after (a
    backfill: the newest events of all); the last slot's second attempt succeeded but was
    fenced, so its accepted outcome is the first attempt's failure. Job `b`: two slots, the
    last one dead-lettered."""
    events: list[dict[str, Any]] = []
    slots = [BASE_MS + n * MINUTE_MS for n in range(SLOTS)]
    for slot in slots[:-1]:
        events += [
            event("a", slot, "requested", slot + 40),
            event("a", slot, "succeeded", slot + 900),
        ]
    last = slots[-1]
    events += [event("a", last, "requested", last + 40), event("a", last, "failed", last + 500),
               event("a", last, "succeeded", last + 800, attempt=2),
               event("a", last, "fenced", last + 850, attempt=2)]  # fmt: skip
    rerun = slots[3]
    after = last + 10 * MINUTE_MS
    events += [event("a", rerun, "requested", after, attempt=2),
               event("a", rerun, "dead_lettered", after + 100, attempt=2)]  # fmt: skip
    for slot in slots[:2]:
        events.append(event("b", slot, "requested", slot + 40))
    events += [event("b", slots[0], "succeeded", slots[0] + 900),
               event("b", slots[1], "dead_lettered", slots[1] + 900)]  # fmt: skip
    return events


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[reads.History]:
    store = ChdbHistoryStore(Path(tmp_path_factory.mktemp("console-queries")) / "history")
    store.migrate()
    source = Source("test", 0, 0, BASE_MS)
    rows = [execution_event_row(e, source) for e in recorded_events()]
    # Every row twice, in two inserts (two parts, not merged): a redelivered batch.
    store.insert("execution_events", rows)
    store.insert("execution_events", rows)
    try:
        yield reads.History(KeptOpen(store))
    finally:
        store.close()


def expected_executions(job: str, limit: int) -> list[tuple[str, int, int, str]]:
    """(execution, slot, highest attempt, newest event's type) of the `limit` executions
    with the newest events, newest slot first."""
    by_execution: dict[str, list[dict[str, Any]]] = {}
    for e in recorded_events():
        if e["job_id"] == job:
            by_execution.setdefault(e["execution_id"], []).append(e)
    newest = sorted(by_execution, key=lambda x: -max(e["event_time"] for e in by_execution[x]))
    chosen = [
        (x, min(e["scheduled_time"] for e in by_execution[x]),
         max(e["attempt"] for e in by_execution[x]),
         max(by_execution[x], key=lambda e: (e["event_time"], e["event_id"]))["event_type"])
        for x in newest[:limit]
    ]  # fmt: skip
    return sorted(chosen, key=lambda c: (-c[1], c[0]))


def test_the_job_pages_executions_are_those_with_the_newest_events_newest_slot_first(
    history: reads.History,
) -> None:
    found = reads.job_executions(history, "a", limit=5)
    got = [(r["execution_id"], reads.to_ms(r["scheduled_time"]), r["attempts"], r["last_event"])
           for r in found]  # fmt: skip
    assert got == expected_executions("a", 5)
    # The backfilled old slot is listed (its events are the newest), last by its slot.
    assert got[-1] == (f"a-exec-{BASE_MS + 3 * MINUTE_MS}", BASE_MS + 3 * MINUTE_MS, 2,
                       "dead_lettered")  # fmt: skip
    assert len(reads.job_executions(history, "a", limit=100)) == SLOTS
    assert reads.job_executions(history, "nobody") == []


def test_the_job_pages_outcome_is_that_jobs_row_of_every_jobs_outcomes(
    history: reads.History,
) -> None:
    every = reads.job_outcomes(history)
    assert set(every) == {"a", "b"}
    for job in ("a", "b"):
        assert reads.job_outcomes(history, job) == {job: every[job]}
    # Job a's newest accepted outcome is the re-run's dead letter; its last success is slot
    # 38's (the last slot's fenced success does not count).
    a = every["a"]
    assert a.last_outcome == "dead_lettered"
    assert a.last_success_ms == BASE_MS + (SLOTS - 2) * MINUTE_MS + 900
    assert every["b"].last_outcome == "dead_lettered"
    assert reads.job_outcomes(history, "nobody") == {}
