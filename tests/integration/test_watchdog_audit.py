"""The second detector against a real history store (embedded chDB): a job that succeeds in
time, so the streaming evaluator raises nothing, but one of whose slots left no record at
all, is a `missed_slots` alert from the schedule audit; a clean history raises nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, S, event, request
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.core.watchdog import Observed, WatchdogState, evaluate
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.history.rows import Source, job_definition_row, requested_event_row
from tickwheel.services.watchdog.second_detector import SecondDetector

pytestmark = pytest.mark.integration

NOW = 1_800_000_000_000  # on a whole minute
JOB = "audited"


def setup(store: ChdbHistoryStore, skip: set[int]) -> tuple[WatchdogState, list[int]]:
    """A job every 2 s, created 60 s ago, with every slot fired and succeeded but `skip`."""
    created = NOW - 60 * S
    record = validate_job({"jobId": JOB, "type": "noop", "cron": "*/2 * * * * *",
                           "expectedMaxInterval": "6s", "jitter": "0s"}, created)  # fmt: skip
    source = Source("t", 0, 0, created)
    state = WatchdogState()
    state.apply(Observed("definition", JOB, record))
    slots = list(range(created + 2 * S, NOW + 1, 2 * S))
    rows = []
    for slot in slots:
        if slot in skip:
            continue
        fired = request(JOB, slot, slot + 5)
        assert fired.record is not None
        rows.append(requested_event_row({**fired.record, "late": False}, source))
        state.apply(fired)
        state.apply(event(JOB, slot, "leased", slot + 20))
        state.apply(event(JOB, slot, "succeeded", slot + 300))
    store.insert("job_definitions", [job_definition_row(record, source)])
    store.insert("execution_events", rows)
    return state, slots


@pytest.mark.parametrize("gap", [False, True])
def test_a_slot_missing_from_the_history_is_raised_by_the_audit_alone(
    tmp_path: Path, gap: bool
) -> None:
    store = ChdbHistoryStore(tmp_path / "history")
    try:
        store.migrate()
        missing = NOW - 30 * S
        state, _ = setup(store, {missing} if gap else set())
        streaming = evaluate(state, NOW + 500, QUICK)[0]
        assert streaming == []  # it succeeded in time: the streaming evaluator sees nothing
        detector = SecondDetector(every_ms=1, lookback_ms=3600 * S, per_round=10,
                                  open_reader=lambda: store)  # fmt: skip
        detector.conditions(state, NOW + 600, QUICK)  # the first round waits one period
        found = detector.conditions(state, NOW + 1_000, QUICK)
        transitions = evaluate(state, NOW + 1_000, QUICK, found)[0]
    finally:
        store.close()
    if not gap:
        assert found == [] and transitions == []
        return
    [condition] = found
    assert condition.kind == "missed_slots" and condition.evidence["slots"] == [missing]
    assert condition.evidence["missing"] == 1
    assert [(t.incident.kind, t.transition) for t in transitions] == [("missed_slots", "opened")]
