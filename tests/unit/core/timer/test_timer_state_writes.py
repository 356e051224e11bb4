"""The states a turn writes for the jobs its worker events changed: built once each, as the job
stands when the transaction is sent, whatever order and however many of its events the turn read
(`PartitionScheduler.refresh_fired_states`), and equal to what building them event by event
left last."""

from __future__ import annotations

from tests.unit.core.timer.test_timer_executions import _fired, _timer, _worker_event
from tests.unit.core.timer.test_timer_scheduler import T0
from tickwheel.core.timer.writes import PartitionWrites


def test_a_turn_writes_one_state_per_changed_job_as_it_stands_when_sent() -> None:
    deferred, eager = _timer(), _timer()
    requests = [_fired(t, "a", {"cron": "* * * * *"}) for t in (deferred, eager)]
    turn = PartitionWrites()
    now = T0 + 60_100
    per_event = []
    for kind in ("leased", "succeeded"):
        deferred.on_execution_event(_worker_event(requests[0], kind, now), now, turn)
        per_event.append(eager.on_execution_event(_worker_event(requests[1], kind, now), now))
    assert turn.states == {} and turn.changed == ["a", "a"]  # nothing built per event
    deferred.refresh_fired_states(turn, now)
    assert turn.changed == []
    # As the last event left it: the execution finished, nothing pending.
    assert turn.states == per_event[-1].states
    assert turn.states["a"] is not None and turn.states["a"]["pending"] == []


def test_a_leased_execution_still_running_when_sent_is_written_running() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"cron": "* * * * *"})
    turn = PartitionWrites()
    now = T0 + 60_100
    timer.on_execution_event(_worker_event(request, "leased", now), now, turn)
    assert turn  # a transaction is owed for it
    timer.refresh_fired_states(turn, now)
    state = turn.states["a"]
    assert state is not None
    [pending] = state["pending"]
    assert '"running"' in pending["data"] and pending["fire_at"] > now


def test_changed_jobs_travel_with_their_job_when_writes_are_chunked() -> None:
    writes = PartitionWrites(changed=["a", "b"], unsaved=["c"])
    chunks = writes.chunks(1)
    assert sorted(j for c in chunks for j in c.changed) == ["a", "b"]
    assert all(set(c.changed) <= {"a", "b"} for c in chunks)
