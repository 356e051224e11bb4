"""Settled executions are held as their highest attempt only (decision 0133): a record about
one read late folds as before (an attempt already seen changes nothing, a newer attempt or a
dead letter brings it back), an evaluation walks only the executions that can raise, and a
settled one is forgotten `settled_after_ms` after it settled."""

from __future__ import annotations

from tests.unit.core.watchdog.test_watchdog_golden import (
    T0,
    S,
    definition,
    event,
    healthy_run,
    request,
)
from tickwheel.core.identity import execution_id
from tickwheel.core.watchdog import Observed, Thresholds, WatchdogState, evaluate

READY = Thresholds(resolve_after_ms=0, oldest_ready_age_ms=10 * S, dead_letter_age_ms=10 * S,
                   settled_after_ms=600 * S)  # fmt: skip
SLOT = T0 + 2 * S


def settled_state() -> WatchdogState:
    state = WatchdogState()
    state.apply(definition("j", emi="1h"))
    for observed in healthy_run("j", SLOT, SLOT):
        state.apply(observed)
    assert evaluate(state, T0 + 5 * S, READY)[0] == []
    assert state.facts.executions == {}  # settled: nothing held one by one
    assert state.facts.is_settled(execution_id("j", 1, SLOT))
    return state


def kinds_at(state: WatchdogState, watermark: int) -> list[tuple[str, str]]:
    return [(t.incident.kind, t.transition) for t in evaluate(state, watermark, READY)[0]]


def test_a_settled_executions_request_read_late_waits_for_nothing() -> None:
    state = settled_state()
    state.apply(request("j", SLOT, SLOT + 5))  # the same attempt, read behind its success
    assert kinds_at(state, T0 + 60 * S) == []


def test_a_newer_attempt_of_a_settled_execution_waits_again() -> None:
    state = settled_state()
    state.apply(request("j", SLOT, T0 + 6 * S, attempt=2))
    got = kinds_at(state, T0 + 20 * S)
    assert ("oldest_ready_age", "opened") in got  # and no worker since: its parent too
    assert [e.requested_attempt for e in state.facts.executions.values()] == [2]


def test_a_dead_letter_of_a_settled_execution_counts_again() -> None:
    state = settled_state()
    state.apply(Observed("dead_letter", "j", {"event_time": T0 + 6 * S, "job_id": "j",
                                              "execution_id": execution_id("j", 1, SLOT),
                                              "attempt": 1}))  # fmt: skip
    assert kinds_at(state, T0 + 20 * S) == [("dead_letter_age", "opened")]


def test_a_late_event_of_an_attempt_already_settled_changes_nothing() -> None:
    state = settled_state()
    state.apply(event("j", SLOT, "heartbeat", SLOT + 100))
    assert state.facts.executions == {}
    assert kinds_at(state, T0 + 60 * S) == []


def test_settled_executions_are_forgotten_after_settled_after_ms() -> None:
    state = settled_state()
    assert evaluate(state, T0 + 400 * S, READY)[0] == []
    assert state.facts.settled
    assert evaluate(state, T0 + 1_300 * S, READY)[0] == []
    assert state.facts.settled == []


def test_a_worker_that_took_a_now_settled_execution_is_alive() -> None:
    # Work of this priority was taken after the waiting one was requested: slow, not absent —
    # though the execution taken has settled since.
    state = WatchdogState()
    state.apply(definition("j", emi="1h"))
    state.apply(request("j", SLOT, SLOT + 5))  # waits
    other = SLOT + 2 * S
    for observed in healthy_run("j", other, other):
        state.apply(observed)
    got = kinds_at(state, T0 + 30 * S)
    assert ("oldest_ready_age", "opened") in got and ("no_live_worker", "opened") not in got
