"""The working state of one `decide` call and the decisions every input handler shares:
start a step, schedule an attempt, fail one, wind the instance down, run the saga."""

from __future__ import annotations

import json
from typing import Any

from tickwheel.core.workflow.definition import StepSpec, TaskSpec, WorkflowDefinition
from tickwheel.core.workflow.events import Event
from tickwheel.core.workflow.ids import (
    alert_id,
    approval_timer,
    deadline_timer,
    overdue_timer,
    parse_timer,
    sleep_timer,
    step_execution_id,
)
from tickwheel.core.workflow.inputs import StepCancelled, StepFailed, StepSucceeded
from tickwheel.core.workflow.state import ENDED, MAX_OUTPUT_BYTES, WorkflowState, evolve
from tickwheel.core.workflow.template import render

__all__ = ["Decider"]

# json.dumps with keyword arguments builds an encoder per call; an output is measured on
# every success (the same bytes as json.dumps(output, separators=(",", ":"))).
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode


class Decider:
    """Emits events into `events`, folding each into `state` at once."""

    def __init__(self, state: WorkflowState, definition: WorkflowDefinition, at_ms: int) -> None:
        self.state = state
        self.definition = definition
        self.at_ms = at_ms
        self.events: list[Event] = []
        self.statuses: list[str] = []  # the instance's status after each event

    def emit(
        self,
        type_: str,
        step: str | None = None,
        attempt: int = 0,
        actor: str | None = None,
        **data: Any,
    ) -> None:
        data = {k: v for k, v in data.items() if v not in (None, [], ())}
        event = Event(self.state.seq + 1, type_, self.at_ms, step, attempt, actor, data)
        self.events.append(event)
        self.state = evolve(self.state, event)
        self.statuses.append(self.state.status)

    def fence(
        self, item: StepSucceeded | StepFailed | StepCancelled, reason: str, **data: Any
    ) -> None:
        self.emit("step_outcome_fenced", item.step, item.attempt, reason=reason, **data)

    # -- small facts -------------------------------------------------------------------

    def execution(
        self, step_id: str, attempt: int, *, compensation: bool = False
    ) -> dict[str, Any]:
        wf = self.state.workflow_id
        return {
            "step": step_id,
            "attempt": attempt,
            "execution_id": step_execution_id(wf, step_id, compensation=compensation),
        }

    def step_timers(self, step_id: str) -> list[str]:
        return sorted(t for t in self.state.timers if parse_timer(t)[1] == step_id)

    def step_alerts(self, step_id: str) -> list[str]:
        # Instances from before decision 0130 may still hold the overdue alert they raised:
        # the step's end clears it, as it did then. No new one is raised.
        wanted = alert_id(self.state.workflow_id, "overdue", step_id)
        return [wanted] if wanted in self.state.alerts else []

    def blocked_alerts(self, step_id: str) -> list[str]:
        wanted = alert_id(self.state.workflow_id, "blocked", step_id)
        return [wanted] if wanted in self.state.alerts else []

    def output_problem(self, output: Any) -> str | None:
        try:
            size = len(_COMPACT_JSON(output).encode())
        except (TypeError, ValueError):
            return "the output is not JSON data; accepted: a JSON value"
        if self.state.output_bytes + size > MAX_OUTPUT_BYTES:
            return (
                f"the output is {size} bytes and the instance holds "
                f"{self.state.output_bytes}; accepted: at most {MAX_OUTPUT_BYTES} bytes "
                "of step outputs per instance (store large results elsewhere and return "
                "a reference)"
            )
        return None

    def _payload(self, task: TaskSpec) -> dict[str, Any]:
        if task.template is None:
            return dict(task.payload or {})
        return render(
            task.template,
            workflow_id=self.state.workflow_id,
            workflow_input=self.state.input,
            outputs=self.state.outputs,
        )

    # -- starting ----------------------------------------------------------------------

    def start_step(self, spec: StepSpec) -> None:
        st = self.state.steps[spec.id]
        overdue = []
        if (
            spec.expected_duration_ms is not None
            and overdue_timer(spec.id) not in self.state.timers
        ):
            overdue = [[overdue_timer(spec.id), self.at_ms + spec.expected_duration_ms]]
        if spec.kind == "sleep":
            assert spec.duration_ms is not None
            self.emit(
                "sleep_started",
                spec.id,
                start_timers=[[sleep_timer(spec.id), self.at_ms + spec.duration_ms]],
            )
        elif spec.kind == "approval":
            self.request_approval(spec, spec.assignees, overdue)
        else:
            self.schedule(spec, st.attempt + 1, self.at_ms, overdue)

    def schedule(
        self,
        spec: StepSpec,
        attempt: int,
        not_before_ms: int,
        timers: list[list[Any]] | None = None,
        **data: Any,
    ) -> None:
        assert spec.task is not None
        timers = list(timers or [])
        if spec.task.timeout_ms is not None:
            timers.append([deadline_timer(spec.id, attempt), not_before_ms + spec.task.timeout_ms])
        self.emit(
            "step_scheduled",
            spec.id,
            attempt,
            execution_id=step_execution_id(self.state.workflow_id, spec.id),
            job_type=spec.task.job_type,
            payload=self._payload(spec.task),
            not_before_ms=not_before_ms,
            start_timers=timers,
            **data,
        )

    def request_approval(
        self, spec: StepSpec, assignees: tuple[str, ...], timers: list[list[Any]] | None = None
    ) -> None:
        round_ = self.state.steps[spec.id].round + 1
        timers = list(timers or [])
        expires = None if spec.timeout_ms is None else self.at_ms + spec.timeout_ms
        if expires is not None:
            timers.append([approval_timer(spec.id, round_), expires])
        self.emit(
            "approval_requested",
            spec.id,
            round=round_,
            assignees=list(assignees),
            expires_at_ms=expires,
            start_timers=timers,
        )

    # -- ending a step -----------------------------------------------------------------

    def succeed(self, spec: StepSpec, output: Any, actor: str | None = None, **data: Any) -> None:
        st = self.state.steps[spec.id]
        size = 0 if output is None else len(_COMPACT_JSON(output).encode())
        fired = data.get("fired_timer")
        self.emit(
            "step_succeeded",
            spec.id,
            st.attempt,
            actor,
            output=output,
            output_bytes=size,
            clear_alerts=self.step_alerts(spec.id),
            cancel_timers=[t for t in self.step_timers(spec.id) if t != fired],
            **data,
        )

    def fail_attempt(self, spec: StepSpec, error: str, *, permanent: bool) -> None:
        """An attempt failed: retry it (tasks, retryable errors, attempts left), or the step
        has failed finally and its `onFailure` applies."""
        st = self.state.steps[spec.id]
        task = spec.task
        if task is not None and not permanent and st.attempt < task.retry.max_attempts:
            self.emit(
                "step_failed",
                spec.id,
                st.attempt,
                error=error,
                permanent=False,
                final=False,
                cancel_timers=[deadline_timer(spec.id, st.attempt)]
                if deadline_timer(spec.id, st.attempt) in self.state.timers
                else [],
            )
            delay = task.retry.ceiling_ms(st.attempt)
            self.schedule(spec, st.attempt + 1, self.at_ms + delay, retry_delay_ms=delay)
            return
        self.emit(
            "step_failed",
            spec.id,
            st.attempt,
            error=error,
            permanent=permanent,
            final=True,
            cancel_timers=self.step_timers(spec.id),
            clear_alerts=self.step_alerts(spec.id),
        )
        policy = spec.on_failure if spec.on_failure != "retry" else self.definition.on_failure
        if policy == "skip":
            self.emit("step_skipped", spec.id, st.attempt, reason="failed; onFailure is skip")
        else:
            self.stop("failed", compensate=policy == "compensate", step=spec.id, error=error)

    # -- winding down and the saga -----------------------------------------------------

    def stop(
        self,
        ending: str,
        *,
        compensate: bool,
        step: str | None = None,
        actor: str | None = None,
        **data: Any,
    ) -> None:
        """Start ending the instance: ask every running execution to stop, drop the waits."""
        self.emit(
            "workflow_failing" if ending == "failed" else "cancel_requested",
            step,
            actor=actor,
            compensate=compensate,
            **data,
        )
        for spec in self.definition.steps:
            st = self.state.steps[spec.id]
            cancels: dict[str, Any] = {
                "cancel_timers": self.step_timers(spec.id),
                "clear_alerts": self.step_alerts(spec.id),
            }
            if st.status == "running":
                self.emit(
                    "step_cancelling",
                    spec.id,
                    st.attempt,
                    **cancels,
                    cancel_execution=self.execution(spec.id, st.attempt),
                )
            elif st.status == "waiting":
                self.emit("step_cancelled", spec.id, st.attempt, **cancels)

    def compensation_outcome(
        self, spec: StepSpec, item: StepSucceeded | StepFailed | StepCancelled
    ) -> None:
        if isinstance(item, StepSucceeded):
            self.emit("compensation_succeeded", spec.id, item.attempt)
            return
        comp = spec.compensation
        assert comp is not None
        error = item.error if isinstance(item, StepFailed) else "cancelled"
        permanent = not isinstance(item, StepFailed) or item.permanent
        if not permanent and item.attempt < comp.retry.max_attempts:
            self.emit("compensation_failed", spec.id, item.attempt, error=error, final=False)
            delay = comp.retry.ceiling_ms(item.attempt)
            self.schedule_compensation(spec, item.attempt + 1, self.at_ms + delay)
            return
        self.emit("compensation_failed", spec.id, item.attempt, error=error, final=True)
        self.emit(
            "workflow_blocked",
            spec.id,
            item.attempt,
            raise_alert={
                "alert_id": alert_id(self.state.workflow_id, "blocked", spec.id),
                "step": spec.id,
                "kind": "workflow_compensation_failed",
                "message": f"the compensation of step {spec.id!r} of {self.state.workflow_id} "
                f"failed finally ({error}); retry, complete or skip it",
            },
        )

    def schedule_compensation(
        self, spec: StepSpec, attempt: int, not_before_ms: int, actor: str | None = None
    ) -> None:
        comp = spec.compensation
        assert comp is not None
        self.emit(
            "compensation_scheduled",
            spec.id,
            attempt,
            actor,
            execution_id=step_execution_id(self.state.workflow_id, spec.id, compensation=True),
            job_type=comp.job_type,
            payload=self._payload(comp),
            not_before_ms=not_before_ms,
            clear_alerts=self.blocked_alerts(spec.id),
        )

    def advance(self) -> None:
        """Whatever the state now allows: start ready steps, finish, or run the saga on."""
        state = self.state
        if state.status == "running":
            steps = state.steps
            for spec in self.definition.steps:
                if steps[spec.id].status == "pending" and all(
                    steps[dep].status in ("succeeded", "skipped") for dep in spec.depends_on
                ):
                    self.start_step(spec)
            if all(s.status in ("succeeded", "skipped") for s in self.state.steps.values()):
                self.emit(
                    "workflow_succeeded",
                    cancel_timers=sorted(self.state.timers),
                    clear_alerts=sorted(self.state.alerts),
                )
            return
        if state.status not in ("stopping", "compensating"):
            return
        if any(
            s.status == "cancelling" or s.comp_status == "running" for s in state.steps.values()
        ):
            return
        if state.compensate:
            for step_id in reversed(state.completed):
                undo = self.definition.step(step_id)
                if (
                    undo is not None
                    and undo.compensation is not None
                    and (state.steps[step_id].comp_status == "")
                ):
                    self.schedule_compensation(undo, 1, self.at_ms)
                    return
        ending = state.ending or "failed"
        final = (
            "workflow_cancelled"
            if ending == "cancelled"
            else ("workflow_compensated" if state.compensate else "workflow_failed")
        )
        self.emit(
            final,
            compensations=len(state.compensated),
            cancel_timers=sorted(state.timers),
            clear_alerts=sorted(state.alerts),
        )

    def ended(self, step_id: str) -> bool:
        return self.state.steps[step_id].status in ENDED
