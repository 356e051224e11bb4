"""Operator repair: retry one step, complete it by hand, skip it. Each is an input with an
actor, recorded in the timeline like any other event.

Where each applies:

* on a **running** instance, to a step that is running or waiting (stuck): retry cancels
  the attempt and schedules the next one; complete and skip cancel it and end the step;
  skip also applies to a pending step;
* on a **failed** instance (it ended without compensating), to its failed step: the
  instance is reopened (`workflow_reopened`) and the steps its wind-down stopped run again;
* on a **blocked** instance, to the step whose compensation failed: retry runs the
  compensation's next attempt, complete records it done by hand, skip passes over it; the
  saga then goes on.

Anything else is recorded as `<action>_ignored` with the reason.
"""

from __future__ import annotations

from tickwheel.core.workflow.decider import Decider
from tickwheel.core.workflow.definition import StepSpec
from tickwheel.core.workflow.inputs import CompleteStep, RetryStep, SkipStep

__all__ = ["OPERATOR", "complete_step", "retry_step", "skip_step"]

OPERATOR = ("retry_step", "complete_step", "skip_step")


def _where(d: Decider, item: RetryStep | CompleteStep | SkipStep) -> tuple[StepSpec | None, str]:
    """The step and which case of the module docstring applies ('' if none)."""
    spec = d.definition.step(item.step)
    if spec is None:
        return None, ""
    st = d.state.steps[spec.id]
    if d.state.status == "blocked" and st.comp_status == "failed":
        return spec, "blocked"
    if d.state.status == "failed" and st.status == "failed":
        return spec, "reopen"
    if d.state.status == "running" and st.status in ("running", "waiting", "pending"):
        return spec, st.status
    return spec, ""


def _ignore(d: Decider, item: RetryStep | CompleteStep | SkipStep, spec: StepSpec | None) -> None:
    if spec is None:
        reason = "unknown_step"
    else:
        st = d.state.steps[spec.id]
        reason = f"workflow {d.state.status}, step {st.status}"
        if st.comp_status:
            reason += f", compensation {st.comp_status}"
    d.emit(f"{item.kind}_ignored", item.step, actor=item.actor, reason=reason)


def _stop_current(d: Decider, spec: StepSpec) -> dict[str, object]:
    """What ending the current attempt or wait by hand must cancel."""
    st = d.state.steps[spec.id]
    running = st.status == "running"
    return {"cancel_execution": d.execution(spec.id, st.attempt) if running else None}


def retry_step(d: Decider, item: RetryStep) -> None:
    spec, case = _where(d, item)
    if spec is None or case in ("", "pending") or (case == "waiting" and spec.kind != "task"):
        _ignore(d, item, spec)
        return
    st = d.state.steps[spec.id]
    if case == "blocked":
        d.schedule_compensation(spec, st.comp_attempt + 1, d.at_ms, actor=item.actor)
        return
    if case == "reopen":
        d.emit("workflow_reopened", spec.id, actor=item.actor, action=item.kind)
    d.emit(
        "step_retried",
        spec.id,
        st.attempt,
        item.actor,
        **_stop_current(d, spec),
        cancel_timers=[t for t in d.step_timers(spec.id) if not t.startswith("overdue:")],
    )
    if spec.kind == "task":
        d.schedule(spec, st.attempt + 1, d.at_ms)
    else:
        d.start_step(spec)


def complete_step(d: Decider, item: CompleteStep) -> None:
    spec, case = _where(d, item)
    problem = d.output_problem(item.output)
    if spec is None or case in ("", "pending") or problem is not None:
        if problem is not None and spec is not None and case not in ("", "pending"):
            d.emit("complete_step_ignored", item.step, actor=item.actor, reason=problem)
        else:
            _ignore(d, item, spec)
        return
    if case == "blocked":
        d.emit(
            "compensation_succeeded",
            spec.id,
            d.state.steps[spec.id].comp_attempt,
            item.actor,
            manual=True,
            clear_alerts=d.blocked_alerts(spec.id),
        )
        return
    if case == "reopen":
        d.emit("workflow_reopened", spec.id, actor=item.actor, action=item.kind)
    d.succeed(spec, output=item.output, actor=item.actor, manual=True, **_stop_current(d, spec))


def skip_step(d: Decider, item: SkipStep) -> None:
    spec, case = _where(d, item)
    if spec is None or case == "":
        _ignore(d, item, spec)
        return
    st = d.state.steps[spec.id]
    if case == "blocked":
        d.emit(
            "compensation_skipped",
            spec.id,
            st.comp_attempt,
            item.actor,
            clear_alerts=d.blocked_alerts(spec.id),
        )
        return
    if case == "reopen":
        d.emit("workflow_reopened", spec.id, actor=item.actor, action=item.kind)
    d.emit(
        "step_skipped",
        spec.id,
        st.attempt,
        item.actor,
        reason="skipped by an operator",
        cancel_timers=d.step_timers(spec.id),
        clear_alerts=d.step_alerts(spec.id),
        **_stop_current(d, spec),
    )
