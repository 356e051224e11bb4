"""What the history store's tables make of the rows, against real ClickHouse
(`history_store_backends.py`): one row per execution in `execution_outcomes`, a fenced
success and a redelivered batch counted once; a dead letter keeps the bad record's own place."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.integration.history_store_backends import (
    DAY0,
    Backend,
    Store,
    backend,
    raw_count,
    store,
)

pytestmark = pytest.mark.integration
__all__ = ["backend", "store"]  # fixtures, imported for pytest to find


# --- one row per execution: execution_outcomes (issue 16 item 13) -----------------------


def _event(
    execution: str, event_type: str, attempt: int, event_id: str, minute: int, **extra: Any
) -> dict[str, Any]:
    slot = DAY0 + dt.timedelta(hours=1)
    return {
        "event_id": event_id,
        "event_time": slot + dt.timedelta(minutes=minute),
        "event_type": event_type,
        "job_id": f"job-{execution}",
        "job_type": "noop",
        "tenant_id": "tenant-1",
        "execution_id": execution,
        "attempt": attempt,
        "scheduled_time": slot,
        "fire_time": slot,
        "worker_id": extra.pop("worker_id", None),
        "error": extra.pop("error", None),
        "source_topic": "executions.events",
        "source_partition": 0,
        "source_offset": minute,
        **extra,
    }


def _fenced(event: dict[str, Any], minute: int) -> dict[str, Any]:
    """What the timer records for a write it did not apply (services/timer/executions.py)."""
    return {
        **event,
        "event_id": f"timer:fenced:{event['event_id']}",
        "event_type": "fenced",
        "event_time": DAY0 + dt.timedelta(hours=1, minutes=minute),
        "source_offset": 1000 + minute,
    }


def fencing_history() -> list[dict[str, Any]]:
    """Five executions whose raw `succeeded` rows overstate what happened."""
    rows: list[dict[str, Any]] = []
    # A: attempt 1's lease expired, attempt 2 succeeded, then attempt 1's worker reported
    # success too (stale, fenced).
    stale_a = _event("A", "succeeded", 1, "succeeded:A:1:w1:u", 9, worker_id="w1")
    rows += [
        _event("A", "requested", 1, "timer:requested:A:1", 0),
        _event("A", "leased", 1, "leased:A:1:w1:u", 1, worker_id="w1"),
        _event("A", "failed", 1, "timer:failed:A:1", 3, error="lease of worker w1 expired"),
        _event("A", "requested", 2, "timer:requested:A:2", 3),
        _event("A", "leased", 2, "leased:A:2:w2:u", 4, worker_id="w2"),
        _event("A", "succeeded", 2, "succeeded:A:2:w2:u", 5, worker_id="w2"),
        stale_a,
        _fenced(stale_a, 10),
    ]
    # B: a redelivered request ran attempt 1 on a second worker; the first lease stands, so
    # only w2's lease and success are fenced and w1's success is the accepted outcome.
    second_lease = _event("B", "leased", 1, "leased:B:1:w2:u", 2, worker_id="w2")
    second_success = _event("B", "succeeded", 1, "succeeded:B:1:w2:u", 4, worker_id="w2")
    rows += [
        _event("B", "requested", 1, "timer:requested:B:1", 0),
        _event("B", "leased", 1, "leased:B:1:w1:u", 1, worker_id="w1"),
        second_lease,
        _fenced(second_lease, 3),
        _event("B", "succeeded", 1, "succeeded:B:1:w1:u", 3, worker_id="w1"),
        second_success,
        _fenced(second_success, 5),
    ]
    # C: a permanent failure, dead-lettered.
    rows += [
        _event("C", "requested", 1, "timer:requested:C:1", 0),
        _event("C", "leased", 1, "leased:C:1:w1:u", 1, worker_id="w1"),
        _event("C", "failed", 1, "failed:C:1:w1:u", 2, worker_id="w1", error="boom"),
        _event("C", "dead_lettered", 1, "timer:dead_lettered:C:1", 2, error="boom"),
    ]
    # D: still running.
    rows += [
        _event("D", "requested", 1, "timer:requested:D:1", 0),
        _event("D", "leased", 1, "leased:D:1:w1:u", 1, worker_id="w1"),
    ]
    # E: attempt 1 expired and attempt 2 waits in the queue; attempt 1's late success is
    # fenced, so the execution is open, not succeeded.
    stale_e = _event("E", "succeeded", 1, "succeeded:E:1:w1:u", 6, worker_id="w1")
    rows += [
        _event("E", "requested", 1, "timer:requested:E:1", 0),
        _event("E", "leased", 1, "leased:E:1:w1:u", 1, worker_id="w1"),
        _event("E", "failed", 1, "timer:failed:E:1", 3, error="lease expired"),
        _event("E", "requested", 2, "timer:requested:E:2", 3),
        stale_e,
        _fenced(stale_e, 7),
    ]
    # a skipped occurrence is no execution
    rows.append(_event("F", "skipped", 0, "timer:skipped:F:0", 0))
    return rows


OUTCOMES_SQL = (
    "SELECT execution_id, outcome, outcome_attempt, outcome_worker_id, attempts, "
    "failed_attempts, fenced_writes FROM execution_outcomes ORDER BY execution_id"
)
EXPECTED_OUTCOMES = [
    ("A", "succeeded", 2, "w2", 2, 1, 1),
    ("B", "succeeded", 1, "w1", 1, 0, 2),
    ("C", "dead_lettered", 1, None, 1, 1, 0),
    ("D", "open", 0, None, 1, 0, 0),
    ("E", "open", 0, None, 2, 1, 1),
]


def test_execution_outcomes_count_a_fenced_success_once(store: Store) -> None:
    store.insert("execution_events", fencing_history())

    # The trap the view exists for: raw success events overstate the successes.
    raw = store.query(
        "SELECT uniqExact(event_id) FROM execution_events FINAL WHERE event_type = 'succeeded'"
    ).scalar()
    assert raw == 5
    assert store.query(OUTCOMES_SQL).rows == EXPECTED_OUTCOMES
    per_outcome = store.query(
        "SELECT outcome, count() FROM execution_outcomes GROUP BY outcome ORDER BY outcome"
    ).rows
    assert per_outcome == [("dead_lettered", 1), ("open", 2), ("succeeded", 2)]
    assert (
        store.query("SELECT last_error FROM execution_outcomes WHERE execution_id = 'C'").scalar()
        == "boom"
    )


def test_execution_outcomes_do_not_double_count_a_redelivered_batch(
    store: Store, backend: Backend
) -> None:
    backend.stop_merges("execution_events")
    history = fencing_history()
    store.insert("execution_events", history, dedup_token="executions.events/0/0-40")
    # Redelivered after a crash, cut differently and under other tokens: physical copies.
    store.insert("execution_events", history[5:20], dedup_token="executions.events/0/5-19")
    store.insert("execution_events", history[15:], dedup_token="executions.events/0/15-40")
    assert raw_count(store) > len(history)

    assert store.query(OUTCOMES_SQL).rows == EXPECTED_OUTCOMES
    assert (
        store.query("SELECT countIf(outcome = 'succeeded') FROM execution_outcomes").scalar() == 2
    )


# --- dead letters keep the bad record's own place (issue 16 item 14) --------------------


def test_a_dead_letter_keeps_the_bad_records_topic_partition_and_offset(store: Store) -> None:
    from tickwheel.services.history.rows import Source, dead_letter_row

    read_at = Source("executions.dlq", 1, 500, 0)
    undecodable = dead_letter_row(
        {"dead_letter_id": "random-1", "event_time": 4_070_908_800_000,
         "reason": "undecodable: bad magic", "source_topic": "jobs.definitions",
         "source_partition": 2, "source_offset": 17, "raw_value": b"\xff"},
        read_at,
    )  # fmt: skip
    exhausted = dead_letter_row(
        {"dead_letter_id": "dlq:exec-9", "event_time": 4_070_908_800_000,
         "reason": "max_attempts_exhausted", "source_topic": "executions.normal",
         "source_partition": -1, "source_offset": -1, "execution_id": "exec-9",
         "job_id": "job-9", "attempt": 3, "error": "boom", "payload": "{}"},
        Source("executions.dlq", 1, 501, 0),
    )  # fmt: skip
    store.insert("dead_letters", [undecodable, exhausted])

    rows = store.query(
        "SELECT event_id, record_topic, record_partition, record_offset, source_topic, "
        "source_offset FROM dead_letters FINAL ORDER BY source_offset"
    ).rows
    assert rows == [
        ("undecodable:jobs.definitions/2/17", "jobs.definitions", 2, 17, "executions.dlq", 500),
        ("dlq:exec-9", "executions.normal", None, None, "executions.dlq", 501),
    ]
