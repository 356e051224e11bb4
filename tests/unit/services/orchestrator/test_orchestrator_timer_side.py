"""The timer's side of workflows (services/timer/workflow_*.py), driven with plain millisecond
arguments: a step attempt is an execution like a job's, its one accepted outcome is owed to
the workflow, its retries are the fold's; workflow timers fire once, also after a restore."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.unit.core.timer.test_timer_executions import LEASE_MS, _worker_event
from tests.unit.core.timer.test_timer_scheduler import T0
from tickwheel.core.timer.executions import LEASE_GRACE_MS
from tickwheel.core.workflow import step_execution_id
from tickwheel.core.workflow.wire import input_of_record
from tickwheel.services.timer.scheduler import PartitionTimer

KEY = "__wf/wf-1/0"
EXEC = step_execution_id("wf-1", "charge")


def _timer() -> PartitionTimer:
    timer = PartitionTimer(0, 3_600_000, 10, T0, 10_000, rng=random.Random(7))
    timer.finish_restore(T0)
    return timer


def _command(kind: str, **fields: Any) -> dict[str, Any]:
    return {"command_id": f"c-{kind}-{fields.get('attempt', 0)}", "job_id": KEY, "kind": kind,
            "requested_at": T0, "range_start": None, "range_end": None, "execution_id": None,
            "data": None, "workflow_id": "wf-1", "step_id": None, "attempt": 0,
            "compensation": False, "job_type": None, "payload": None, "tenant_id": None,
            "max_attempts": 1, "timer_id": None, "fire_at": None, **fields}  # fmt: skip


def _run(attempt: int, *, max_attempts: int = 3, fire_at: int | None = None) -> dict[str, Any]:
    return _command("run_step", execution_id=EXEC, step_id="charge", attempt=attempt,
                    job_type="charge_card", payload=json.dumps({"amount": 5}),
                    max_attempts=max_attempts, fire_at=fire_at)  # fmt: skip


def _owed(timer: PartitionTimer) -> list[Any]:
    inputs, _controls = timer.workflows.take()
    return [input_of_record(item) for item in inputs]


def test_run_step_requests_exactly_the_attempt_asked_with_the_workflow_in_the_request() -> None:
    timer = _timer()
    [request] = timer.command(_run(2), T0).requests
    assert (request["execution_id"], request["attempt"]) == (EXEC, 2)
    assert (request["workflow_id"], request["step_id"], request["job_id"]) == (
        "wf-1",
        "charge",
        KEY,
    )
    assert timer.command(_run(2), T0 + 5).requests == []  # a repeat changes nothing


def test_a_success_owes_the_workflow_one_outcome_with_the_handlers_result() -> None:
    timer = _timer()
    [request] = timer.command(_run(1), T0).requests
    timer.on_execution_event(_worker_event(request, "leased", T0 + 10), T0 + 10)
    done = _worker_event(request, "succeeded", T0 + 20)
    done["details"] = json.dumps({"result": {"receipt": "r-1"}})
    emission = timer.on_execution_event(done, T0 + 20)
    [outcome] = _owed(timer)
    assert outcome.kind == "step_succeeded" and outcome.output == {"receipt": "r-1"}
    assert (outcome.step, outcome.attempt, outcome.compensation) == ("charge", 1, False)
    assert emission.states[KEY] is None  # nothing of the workflow left in flight: a tombstone
    timer.on_execution_event(done, T0 + 30)  # the same outcome again is fenced, owes nothing
    assert _owed(timer) == []


def test_a_failed_attempt_is_reported_not_retried_and_the_last_one_is_dead_lettered() -> None:
    timer = _timer()
    [request] = timer.command(_run(1, max_attempts=2), T0).requests
    timer.on_execution_event(_worker_event(request, "leased", T0 + 10), T0 + 10)
    failed = timer.on_execution_event(
        _worker_event(request, "failed", T0 + 20, error="boom", error_kind="retryable"), T0 + 20
    )
    [outcome] = _owed(timer)
    assert outcome.kind == "step_failed" and not outcome.permanent and outcome.error == "boom"
    assert failed.requests == [] and failed.dead_letters == []
    assert timer.tick(T0 + 600_000).requests == []  # the timer never retries a step itself
    [second] = timer.command(_run(2, max_attempts=2), T0 + 1_000).requests
    timer.on_execution_event(_worker_event(second, "leased", T0 + 1_010), T0 + 1_010)
    last = timer.on_execution_event(
        _worker_event(second, "failed", T0 + 1_020, error="boom", error_kind="retryable"),
        T0 + 1_020,
    )
    assert [d["execution_id"] for d in last.dead_letters] == [EXEC]
    assert [o.kind for o in _owed(timer)] == ["step_failed"]


def test_an_expired_lease_fails_the_attempt_for_the_fold_to_decide() -> None:
    timer = _timer()
    [request] = timer.command(_run(1), T0).requests
    timer.on_execution_event(_worker_event(request, "leased", T0 + 10), T0 + 10)
    emission = timer.tick(T0 + 10 + LEASE_MS + LEASE_GRACE_MS + 20)
    assert emission.requests == []  # no attempt 2 from the timer: the fold numbers attempts
    [outcome] = _owed(timer)
    assert outcome.kind == "step_failed" and "lease" in outcome.error


def test_a_delayed_attempt_waits_as_a_timer_and_survives_a_restore() -> None:
    timer = _timer()
    emission = timer.command(_run(1, fire_at=T0 + 5_000), T0)
    assert emission.requests == []
    heir = PartitionTimer(0, 3_600_000, 10, T0, 10_000, rng=random.Random(7))
    heir.load_state(KEY, emission.states[KEY])
    heir.finish_restore(T0 + 100)
    assert heir.tick(T0 + 4_990).requests == []
    [request] = heir.tick(T0 + 5_010).requests
    assert (request["execution_id"], request["attempt"]) == (EXEC, 1)
    assert heir.tick(T0 + 6_000).requests == []


def test_a_workflow_timer_fires_once_after_a_restore_and_a_cancelled_one_never() -> None:
    timer = _timer()
    timer.command(_command("start_timer", timer_id="sleep:nap", fire_at=T0 + 2_000), T0)
    state = timer.command(_command("start_timer", timer_id="overdue:x", fire_at=T0 + 3_000),
                          T0).states[KEY]  # fmt: skip
    heir = PartitionTimer(0, 3_600_000, 10, T0, 10_000, rng=random.Random(7))
    heir.load_state(KEY, state)
    heir.finish_restore(T0 + 100)
    heir.command(_command("cancel_timer", timer_id="overdue:x"), T0 + 200)
    emission = heir.tick(T0 + 2_010)
    [fired] = _owed(heir)
    assert (fired.kind, fired.timer_id, fired.at_ms) == ("timer_fired", "sleep:nap", T0 + 2_000)
    assert emission.states[KEY] is None
    heir.tick(T0 + 10_000)
    assert _owed(heir) == []


def test_cancelling_a_queued_attempt_answers_at_once_and_a_running_one_by_its_worker() -> None:
    timer = _timer()
    timer.command(_run(1), T0)
    timer.command(_command("cancel_execution", execution_id=EXEC, step_id="charge", attempt=1),
                  T0 + 10)  # fmt: skip
    inputs, controls = timer.workflows.take()
    assert [input_of_record(i).kind for i in inputs] == ["step_cancelled"]
    assert [c["execution_id"] for c in controls] == [EXEC]

    [request] = timer.command(_run(2), T0 + 20).requests
    timer.on_execution_event(_worker_event(request, "leased", T0 + 30), T0 + 30)
    timer.command(_command("cancel_execution", execution_id=EXEC, step_id="charge", attempt=2),
                  T0 + 40)  # fmt: skip
    inputs, controls = timer.workflows.take()
    assert inputs == [] and len(controls) == 1  # the worker answers
    timer.on_execution_event(_worker_event(request, "cancelled", T0 + 50), T0 + 50)
    assert [(o.kind, o.attempt) for o in _owed(timer)] == [("step_cancelled", 2)]


def test_an_operators_retry_replaces_the_attempt_in_flight_and_fences_the_old_one() -> None:
    timer = _timer()
    [first] = timer.command(_run(1), T0).requests
    timer.on_execution_event(_worker_event(first, "leased", T0 + 10), T0 + 10)
    [second] = timer.command(_run(2), T0 + 20).requests
    late = timer.on_execution_event(_worker_event(first, "succeeded", T0 + 30), T0 + 30)
    assert [e["event_type"] for e in late.events] == ["fenced"] and _owed(timer) == []
    assert second["execution_id"] == first["execution_id"] and second["attempt"] == 2
