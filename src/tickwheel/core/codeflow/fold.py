"""The code kind's fold (decision 0217), pure: what each input means for an instance of a
workflow written as code. No workflow code runs here.

`decide` turns each input into history events (a step's outcome into `step_completed`, a
signal into `signal_received`...) and sends the history to a worker as a *workflow task*, a
step execution named `@task` on the path every step takes. The worker replays the history
against the author's code and answers with the commands the code issued; the fold records
them and turns each into what the other services do (a `step_scheduled` into a step
execution, a `timer_started` into a timer...).

One task is outstanding at a time: the commands of task *n* were decided on the history it
carried, so they are appended right after it, and the inputs that arrived meanwhile are held
and appended after them (recorded as `input_held` when they arrive). The engine history is
therefore exactly the sequence of history events recorded on `workflows.events`, in order.

Every event's `data` holds what its effects need, under the keys of `events.py` (a list,
`cancel_executions`, where an ending may stop several steps) and `schedule_step`; a history
event's `data` is its JSON beside those keys (`kind.py` reads both back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tickwheel.core.codeflow.definition import CodeWorkflowDefinition
from tickwheel.core.codeflow.history import (
    HistoryEvent,
    JsonObject,
)
from tickwheel.core.codeflow.state import ENDED, CodeState, OpenStep, status_of
from tickwheel.core.codeflow.tasks import (
    TASK_STEP,
    code_step_execution_id,
    code_timer_id,
    parse_code_timer,
    read_answer,
    retry_delay_ms,
    task_execution_id,
    task_job_type,
    task_payload,
)
from tickwheel.core.retry import RetryPolicy
from tickwheel.core.workflow.deciding import Decided, check_pinned
from tickwheel.core.workflow.events import (
    Event,
    SendInput,
    child_start_refused,
    send_input_entry,
)
from tickwheel.core.workflow.ids import alert_id
from tickwheel.core.workflow.inputs import (
    Cancel,
    ChildEnded,
    CompleteStep,
    Input,
    RetryStep,
    Signal,
    Start,
    StartChild,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
)

__all__ = ["TASK_MAX_ATTEMPTS", "decide", "step_label"]

# A task that fails as retryable (its worker's lease expired, a worker without the workflow's
# handler took it) is sent again, as the next task, this many times in a row at most before
# the instance parks; one that fails as permanent (the activation raised) parks at once.
TASK_MAX_ATTEMPTS = 5
_TASK_RETRY = RetryPolicy()
_STATUS_BY_ENDING = {
    "workflow_completed": "succeeded",
    "workflow_failed": "failed",
    "workflow_cancelled": "cancelled",
}


def step_label(scheduled: HistoryEvent, run: int) -> str:
    """The step id a `step_scheduled` stands for on the execution path: `name#occurrence`,
    and `@run` after it past the first run. A step's outcome names its step and attempt only,
    so a step the last run left running (stopped by its continue-as-new) must not share an id
    with the next run's step of the same name: its late verdict would be taken for it."""
    label = f"{scheduled.name}#{scheduled.data.get('occurrence')}"
    return label if run == 1 else f"{label}@{run}"


class _Fold:
    """One `decide` call: emits events, changing `state` as it goes."""

    def __init__(self, state: CodeState, definition: CodeWorkflowDefinition, at_ms: int) -> None:
        self.state = state
        self.definition = definition
        self.at_ms = at_ms
        self.events: list[Event] = []
        self.statuses: list[str] = []

    def emit(
        self,
        type_: str,
        step: str | None = None,
        attempt: int = 0,
        actor: str | None = None,
        data: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> None:
        state = replace(self.state, seq=self.state.seq + 1, **changes)
        state = replace(state, status=status_of(state))
        self.state = state
        clean = {k: v for k, v in (data or {}).items() if v not in (None, [], ())}
        self.events.append(Event(state.seq, type_, self.at_ms, step, attempt, actor, clean))
        self.statuses.append(state.status)

    def record(
        self,
        event: HistoryEvent,
        step: str | None = None,
        attempt: int = 0,
        actor: str | None = None,
        effects: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> None:
        """Append `event` to the history, recorded as one event of its own type."""
        data = {**event.to_json(), **{k: v for k, v in (effects or {}).items() if v}}
        history = (*self.state.history, event)
        self.emit(event.type, step, attempt, actor, data, history=history, **changes)
        # The history's own data is kept whole (a null result is a result).
        self.events[-1] = replace(self.events[-1], data=data)

    # -- inputs into the history ------------------------------------------------------------

    def add_input(
        self,
        event: HistoryEvent,
        step: str | None = None,
        attempt: int = 0,
        actor: str | None = None,
    ) -> None:
        """An input for the history: held while a task is out, else appended and sent."""
        if self.state.outstanding:
            self.emit(
                "input_held",
                step,
                attempt,
                actor,
                {"task": self.state.task, "event": event.to_json()},
                held=(*self.state.held, event),
            )
            return
        self.record(event, step, attempt, actor)
        if self.state.task_error is None:
            self.send_task()

    def flush_held(self) -> None:
        held = self.state.held
        self.state = replace(self.state, held=())
        for event in held:
            # A held cancel carries who asked in its data, so the flush records them.
            actor = event.data.get("actor") if event.type == "cancel_requested" else None
            self.record(event, self._step_of(event), int(event.data.get("attempts") or 0), actor)

    def _step_of(self, event: HistoryEvent) -> str | None:
        """`name#occurrence` of the step an outcome answers (its scheduling has the
        occurrence)."""
        if event.type not in ("step_completed", "step_failed"):
            return None
        for scheduled in reversed(self.state.history):
            if scheduled.type == "step_scheduled" and scheduled.position == event.position:
                return step_label(scheduled, self.state.run)
        return None

    def send_task(self, not_before_ms: int | None = None, **data: Any) -> None:
        state = self.state
        n, base = state.task + 1, state.base
        execution_id = task_execution_id(state.workflow_id, state.run, n)
        payload = task_payload(
            state.definition_id,
            state.workflow_id,
            state.run,
            self.definition.code_version,
            n,
            base,
            state.history[base:],
        )
        self.emit(
            "task_scheduled",
            TASK_STEP,
            n,
            data={
                "task": n,
                "base": base,
                "length": len(state.history),
                **data,
                "execution_id": execution_id,
                "schedule_step": {
                    "step": TASK_STEP,
                    "attempt": n,
                    "execution_id": execution_id,
                    "job_type": task_job_type(state.definition_id),
                    "payload": payload,
                    "not_before_ms": self.at_ms if not_before_ms is None else not_before_ms,
                },
            },
            task=n,
            outstanding=True,
            sent_length=len(state.history),
        )

    # -- the answer's commands --------------------------------------------------------------

    def open_work(self, also_send: list[JsonObject] | None = None) -> JsonObject:
        """The effects that stop what is open in the run (its steps, its timers, alerts, its
        children), with `also_send` among the inputs sent."""
        state = self.state
        return {
            "cancel_executions": [
                {
                    "step": label,
                    "attempt": st.attempt,
                    "execution_id": code_step_execution_id(
                        state.workflow_id, state.run, st.position
                    ),
                }
                for label, st in sorted(state.steps.items())
            ],
            "cancel_timers": [code_timer_id(state.run, p) for p in sorted(state.timers)],
            "clear_alerts": sorted(state.alerts),
            # A run's end ends its open children (a parent that is gone waits for nobody).
            "send_inputs": [
                _send(
                    child_id,
                    f"wf:{state.workflow_id}:cancel-child:{state.run}:{child_id}",
                    Cancel(self.at_ms, f"workflow:{state.workflow_id}", "its parent ended"),
                )
                for child_id in sorted(state.children)
            ]
            + (also_send or []),
        }

    def start_child(self, event: HistoryEvent) -> None:
        """The code started a child workflow: it is started as an instance of its own, told
        its parent and the position its end answers (decision 0218)."""
        state = self.state
        child_id = str(event.data.get("child_id"))
        position = event.position or 0
        if child_id in state.children:
            # The run started this id already (an explicit `workflow_id` used twice): the
            # second wait fails, after the answer's commands, as a held input does.
            error = f"a child {child_id} of this run is running already"
            failed = HistoryEvent("child_failed", self.at_ms, position, child_id, {"error": error})
            self.record(event, held=(*state.held, failed))
            return
        start = StartChild(
            self.at_ms, state.workflow_id, position, event.data.get("input"), state.run
        )
        input_id = f"wf:{state.workflow_id}:child:{state.run}:{child_id}"
        send = _send(child_id, input_id, start, definition_id=event.name)
        children = {**state.children, child_id: position}
        self.record(event, effects={"send_inputs": [send]}, children=children)

    def tell_parent(self, kind: str, data: Mapping[str, Any]) -> list[JsonObject]:
        """A child's end, for its parent (nothing for an instance that has none)."""
        state = self.state
        if state.parent is None:
            return []
        parent_id, run, position = state.parent
        status = _STATUS_BY_ENDING[kind]
        error = data.get("error")
        ended = ChildEnded(
            self.at_ms,
            state.workflow_id,
            position,
            status,
            data.get("result") if status == "succeeded" else None,
            None if status == "succeeded" else str(error or status),
            run,
        )
        input_id = f"wf:{state.workflow_id}:ended:{parent_id}:{run}"
        return [_send(parent_id, input_id, ended)]

    def child_ended(self, item: ChildEnded) -> None:
        """A child's end, as the history event its wait in the code answers to."""
        state = self.state
        if item.run != state.run or state.children.get(item.child_id) != item.position:
            self.emit(
                "child_ended_ignored",
                data={"child_id": item.child_id, "reason": "not_an_open_child"},
            )
            return
        children = {k: v for k, v in state.children.items() if k != item.child_id}
        self.state = replace(state, children=children)
        if item.status == "succeeded":
            data: JsonObject = {"result": item.result}
            event = HistoryEvent("child_completed", self.at_ms, item.position, item.child_id, data)
        else:
            data = {"error": item.error or item.status, "status": item.status}
            event = HistoryEvent("child_failed", self.at_ms, item.position, item.child_id, data)
        self.add_input(event)

    def command(self, event: HistoryEvent) -> None:
        state, kind, data = self.state, event.type, event.data
        position = event.position or 0
        if kind == "step_scheduled":
            raw = data.get("options")
            options: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            label = step_label(event, state.run)
            open_step = OpenStep(
                position,
                str(event.name),
                1,
                _int(options.get("max_attempts"), _TASK_RETRY.max_attempts),
                _int(options.get("base_ms"), _TASK_RETRY.base_ms),
                _int(options.get("cap_ms"), _TASK_RETRY.cap_ms),
            )
            execution_id = code_step_execution_id(state.workflow_id, state.run, position)
            schedule = _schedule(label, 1, execution_id, event, self.at_ms)
            steps = {**state.steps, label: open_step}
            effects = {"execution_id": execution_id, "schedule_step": schedule}
            self.record(event, label, 1, effects=effects, steps=steps)
        elif kind in ("timer_started", "signal_wait_started"):
            fire_at = data.get("fire_at_ms")
            if fire_at is None:
                self.record(event)
            else:
                start = [[code_timer_id(state.run, position), int(fire_at)]]
                timers = state.timers | {position}
                self.record(event, effects={"start_timers": start}, timers=timers)
        elif kind == "timer_cancelled":
            timer = _int(data.get("timer"), 0)
            if timer in state.timers:
                cancel = [code_timer_id(state.run, timer)]
                self.record(event, effects={"cancel_timers": cancel}, timers=state.timers - {timer})
            else:
                self.record(event)
        elif kind == "child_started":
            self.start_child(event)
        elif kind == "workflow_parked":
            self.park(event)
        elif kind in _STATUS_BY_ENDING:
            self.record(
                event,
                effects=self.open_work(also_send=self.tell_parent(kind, data)),
                status=_STATUS_BY_ENDING[kind],
                steps={},
                children={},
                timers=frozenset(),
                alerts=frozenset(),
                held=(),
                result=data.get("result"),
                error=None if data.get("error") is None else str(data.get("error")),
                waiting_on=(),
            )
        elif kind == "continued_as_new":
            self.continue_as_new(event)
        else:  # side_effect_recorded, patch_marker, rollback_registered: facts of the history
            self.record(event)

    def park(self, event: HistoryEvent) -> None:
        """The code parked (a compensation failed finally): blocked, with an alert for a
        person."""
        state = self.state
        reason = str(event.data.get("reason") or "parked")
        message = (
            f"workflow {state.definition_id} instance {state.workflow_id} parked at "
            f"{event.name!r} ({reason}): {event.data.get('error')}"
        )
        alert = alert_id(state.workflow_id, "blocked", f"@run{state.run}:{event.position}")
        raise_alert = {
            "alert_id": alert,
            "step": TASK_STEP,
            "kind": "workflow_parked",
            "message": message,
        }
        self.record(
            event,
            effects={"raise_alert": raise_alert},
            parked=reason,
            alerts=state.alerts | {alert},
        )

    def continue_as_new(self, event: HistoryEvent) -> None:
        """Run r ends; run r+1 starts with a fresh history whose `workflow_started` carries
        the new input. Held signals and a held cancel are for the instance, not the run:
        they go into the new run; the old run's outcomes and timers do not."""
        carried = tuple(
            e for e in self.state.held if e.type in ("signal_received", "cancel_requested")
        )
        self.record(
            event,
            effects=self.open_work(),
            steps={},
            children={},
            timers=frozenset(),
            alerts=frozenset(),
            held=(),
            parked=None,
            waiting_on=(),
        )
        run = self.state.run + 1
        self.state = replace(self.state, run=run, history=(), base=0, sent_length=0)
        self.start(event.data.get("input"), carried)

    def start(self, value: Any, carried: tuple[HistoryEvent, ...] = ()) -> None:
        state = self.state
        started = HistoryEvent(
            "workflow_started",
            self.at_ms,
            name=state.definition_id,
            data={
                "workflow_id": state.workflow_id,
                "run": state.run,
                "input": value,
                "seed": f"{state.workflow_id}:{state.run}",
            },
        )
        self.record(started, status="running")
        for event in carried:
            self.record(event)
        self.send_task()

    # -- task outcomes ----------------------------------------------------------------------

    def answered(self, item: StepSucceeded) -> None:
        state = self.state
        try:
            answer = read_answer(item.output)
        except ValueError as exc:
            if not self._is_current(item.attempt):
                self.stale(item.attempt, str(exc))
            else:
                self.task_failed(f"the answer is malformed: {exc}", permanent=True)
            return
        if not self._is_current(item.attempt) or answer.task != item.attempt:
            self.stale(
                item.attempt, f"task {answer.task} answered; outstanding: {self._outstanding()}"
            )
            return
        if answer.missed:
            self.emit(
                "task_missed",
                TASK_STEP,
                answer.task,
                data={"task": answer.task},
                outstanding=False,
                base=0,
                task_failures=0,
            )
            self.flush_held()
            self.send_task()
            return
        last = max((e.position or 0 for e in state.history if e.is_command), default=0)
        problem = None
        for command in answer.commands:
            if (command.position or 0) <= last:
                problem = f"command {command.type} has position {command.position}; the history is at {last}"
                break
            last = command.position or 0
        if problem is None and answer.base != state.base:
            problem = (
                f"it was computed from base {answer.base}; the task was sent with {state.base}"
            )
        if problem is not None:
            self.task_failed(f"the answer is malformed: {problem}", permanent=True)
            return
        self.emit(
            "task_answered",
            TASK_STEP,
            answer.task,
            data={
                "task": answer.task,
                "commands": len(answer.commands),
                "status": answer.status,
                "waiting_on": list(answer.waiting_on),
                "query": answer.query,
            },
            outstanding=False,
            base=state.sent_length + len(answer.commands),
            task_failures=0,
            query=answer.query,
            waiting_on=answer.waiting_on,
        )
        # The commands were decided on the history the task carried, which nothing was
        # appended to since (inputs are held while a task is out): they go right after it,
        # before the held inputs, the order the worker's cached run consumes them in.
        run = state.run
        for command in answer.commands:
            if self.state.status in ENDED or self.state.run != run:
                break  # nothing follows an ending (the engine issues nothing after one)
            self.command(command)
        if self.state.status in ENDED or self.state.run != run:
            return  # what was held is for a run that ended: recorded, and no further
        held = bool(self.state.held)
        self.flush_held()
        if held and self.state.task_error is None and not self.state.outstanding:
            self.send_task()

    def _outstanding(self) -> str:
        return str(self.state.task) if self.state.outstanding else "none"

    def _is_current(self, task: int) -> bool:
        return self.state.outstanding and task == self.state.task

    def stale(self, task: int, reason: str) -> None:
        self.emit("task_stale", TASK_STEP, task, data={"task": task, "reason": reason})

    def task_failed(self, error: str, *, permanent: bool) -> None:
        """The task's execution failed. A retryable failure (a lost worker, a worker without
        the handler) is sent again as the next task, up to `TASK_MAX_ATTEMPTS` in a row; a
        permanent one (the activation raised: the code cannot run on this history) parks the
        instance until a signal, a cancel or an operator's retry of `@task`."""
        state = self.state
        failures = state.task_failures + 1
        data: JsonObject = {"task": state.task, "error": error, "permanent": permanent}
        if not permanent and failures < TASK_MAX_ATTEMPTS:
            execution_id = task_execution_id(state.workflow_id, state.run, state.task)
            delay = retry_delay_ms(execution_id, failures, _TASK_RETRY)
            self.emit(
                "task_failed",
                TASK_STEP,
                state.task,
                data={**data, "retry_delay_ms": delay},
                outstanding=False,
                base=0,
                task_failures=failures,
            )
            self.flush_held()
            self.send_task(self.at_ms + delay)
            return
        alert = alert_id(state.workflow_id, "blocked", TASK_STEP)
        raise_alert = {
            "alert_id": alert,
            "step": TASK_STEP,
            "kind": "workflow_task_failed",
            "message": f"workflow {state.definition_id} instance {state.workflow_id}: task "
            f"{state.task} failed ({error}); fix the code, then retry step {TASK_STEP}",
        }
        self.emit(
            "task_failed",
            TASK_STEP,
            state.task,
            data={**data, "raise_alert": raise_alert},
            outstanding=False,
            base=0,
            task_failures=failures,
            task_error=error,
            alerts=state.alerts | {alert},
        )
        self.flush_held()

    def resume(self, why: str, actor: str | None = None) -> None:
        """Tasks stopped after a failure: clear its alert and send the whole history again."""
        state = self.state
        alert = alert_id(state.workflow_id, "blocked", TASK_STEP)
        self.emit(
            "task_resumed",
            TASK_STEP,
            state.task,
            actor,
            {"reason": why, "clear_alerts": [alert] if alert in state.alerts else []},
            task_error=None,
            task_failures=0,
            base=0,
            alerts=state.alerts - {alert},
        )
        if not self.state.outstanding:
            self.send_task()

    # -- step outcomes ----------------------------------------------------------------------

    def step_outcome(self, item: StepSucceeded | StepFailed | StepCancelled) -> None:
        state = self.state
        about = {"outcome": item.kind.removeprefix("step_")}
        open_step = state.steps.get(item.step)
        if open_step is None:
            self.emit(
                "step_outcome_fenced",
                item.step,
                item.attempt,
                data={**about, "reason": "unknown_step"},
            )
            return
        if item.attempt != open_step.attempt:
            reason = "stale_attempt" if item.attempt < open_step.attempt else "unknown_attempt"
            self.emit(
                "step_outcome_fenced", item.step, item.attempt, data={**about, "reason": reason}
            )
            return
        steps = {k: v for k, v in state.steps.items() if k != item.step}
        if isinstance(item, StepSucceeded):
            event = HistoryEvent(
                "step_completed",
                self.at_ms,
                open_step.position,
                open_step.name,
                {"result": item.output, "attempts": item.attempt},
            )
            self.state = replace(state, steps=steps)
            self.add_input(event, item.step, item.attempt)
            return
        if isinstance(item, StepFailed):
            error, permanent = item.error, item.permanent
        else:  # cancelled without the fold asking (executions.control by hand)
            error, permanent = "cancelled outside the workflow", True
        policy = open_step.policy()
        if not permanent and item.attempt < policy.max_attempts:
            execution_id = code_step_execution_id(state.workflow_id, state.run, open_step.position)
            delay = retry_delay_ms(execution_id, item.attempt, policy)
            again = item.attempt + 1
            scheduled = next(
                e
                for e in state.history
                if e.type == "step_scheduled" and e.position == open_step.position
            )
            schedule = _schedule(item.step, again, execution_id, scheduled, self.at_ms + delay)
            self.emit(
                "step_attempt_failed",
                item.step,
                item.attempt,
                data={
                    "error": error,
                    "retry_delay_ms": delay,
                    "execution_id": execution_id,
                    "schedule_step": schedule,
                },
                steps={**state.steps, item.step: replace(open_step, attempt=again)},
            )
            return
        data = {
            "error": error,
            "error_kind": "permanent" if permanent else "retryable",
            "attempts": item.attempt,
            "reason": "permanent_error" if permanent else "max_attempts_exhausted",
        }
        event = HistoryEvent("step_failed", self.at_ms, open_step.position, open_step.name, data)
        self.state = replace(state, steps=steps)
        self.add_input(event, item.step, item.attempt)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _schedule(
    step: str, attempt: int, execution_id: str, scheduled: HistoryEvent, not_before_ms: int
) -> JsonObject:
    """The `schedule_step` effect of an attempt of the step `scheduled` records: every
    attempt runs the recorded function (`code:<module:qualname>`) on the recorded arguments."""
    options = scheduled.data.get("options")
    ref = options.get("ref") if isinstance(options, Mapping) else None
    return {
        "step": step,
        "attempt": attempt,
        "execution_id": execution_id,
        "job_type": f"code:{ref}",
        "payload": {"args": scheduled.data.get("input")},
        "not_before_ms": not_before_ms,
    }


# -- the kind -------------------------------------------------------------------------------


def _send(
    workflow_id: str, input_id: str, item: Input, definition_id: str | None = None
) -> JsonObject:
    return send_input_entry(SendInput(workflow_id, input_id, item, definition_id))


def _decide(fold: _Fold, item: Input) -> None:
    state = fold.state
    if isinstance(item, Start | StartChild):
        if state.status != "new":
            data: JsonObject = {"reason": f"already {state.status}"}
            if isinstance(item, StartChild) and state.parent != (
                item.parent_id,
                item.run,
                item.position,
            ):
                # Another instance has this id (or had: a child of an earlier run of the same
                # parent): the parent that asked is told at once.
                error = f"an instance {state.workflow_id} exists already ({state.status})"
                told = child_start_refused(state.workflow_id, item, item.at_ms, "taken", error)
                data["send_inputs"] = [send_input_entry(told)]
            fold.emit("start_ignored", data=data)
            return
        try:
            json.dumps(item.input, allow_nan=False)
        except (TypeError, ValueError):
            fold.emit("start_ignored", data={"reason": "the input is not JSON data"})
            return
        if isinstance(item, StartChild):
            fold.state = replace(state, parent=(item.parent_id, item.run, item.position))
        fold.start(item.input)
        return
    step = getattr(item, "step", None)
    if state.status == "new" or state.status in ENDED:
        reason = "not_started" if state.status == "new" else f"workflow_{state.status}"
        if isinstance(item, StepSucceeded | StepFailed | StepCancelled):
            about = {"outcome": item.kind.removeprefix("step_"), "reason": reason}
            fold.emit("step_outcome_fenced", step, item.attempt, data=about)
        else:
            fold.emit(
                f"{item.kind}_ignored",
                step,
                actor=getattr(item, "actor", None),
                data={"reason": reason},
            )
        return
    if isinstance(item, StepSucceeded | StepFailed | StepCancelled):
        if item.step != TASK_STEP:
            fold.step_outcome(item)
        elif isinstance(item, StepSucceeded):
            fold.answered(item)
        elif not fold._is_current(item.attempt):
            fold.stale(
                item.attempt,
                f"task {item.attempt} {item.kind.removeprefix('step_')}; "
                f"outstanding: {fold._outstanding()}",
            )
        elif isinstance(item, StepFailed):
            fold.task_failed(item.error or "the task failed", permanent=item.permanent)
        else:
            fold.task_failed("the task was cancelled outside the workflow", permanent=True)
    elif isinstance(item, TimerFired):
        timer = parse_code_timer(item.timer_id)
        if timer is None or timer[0] != state.run or timer[1] not in state.timers:
            fold.emit("timer_fired_ignored", data={"timer_id": item.timer_id, "reason": "not_open"})
            return
        fold.state = replace(state, timers=state.timers - {timer[1]})
        fold.add_input(HistoryEvent("timer_fired", item.at_ms, timer[1]))
    elif isinstance(item, ChildEnded):
        fold.child_ended(item)
    elif isinstance(item, Signal):
        if item.signal_id in state.signals:
            fold.emit(
                "signal_duplicate",
                data={"name": item.name, "signal_id": item.signal_id},
            )
            return
        fold.state = replace(state, signals=state.signals | {item.signal_id})
        event = HistoryEvent(
            "signal_received",
            item.at_ms,
            name=item.name,
            data={"signal_id": item.signal_id, "payload": item.payload},
        )
        fold.add_input(event)
        if fold.state.task_error is not None:
            fold.resume("signal")
    elif isinstance(item, Cancel):
        data = {"reason": item.reason, "actor": item.actor}
        event = HistoryEvent("cancel_requested", item.at_ms, data=data)
        fold.add_input(event, actor=item.actor)
        if fold.state.task_error is not None:
            fold.resume("cancel", item.actor)
    elif isinstance(item, RetryStep | CompleteStep) and item.step in state.steps:
        _repair(fold, item)
    elif isinstance(item, RetryStep) and item.step == TASK_STEP:
        if state.task_error is None:
            fold.emit(
                "retry_step_ignored",
                TASK_STEP,
                actor=item.actor,
                data={"reason": "the workflow task has not failed"},
            )
        else:
            fold.resume("retry_step", item.actor)
    else:
        # Approvals, reassignments, skips, and repairs of a step that is not open have
        # nothing to act on here: a step's final failure is the code's to handle.
        fold.emit(
            f"{item.kind}_ignored",
            step,
            actor=getattr(item, "actor", None),
            data={"reason": "not_a_dag_workflow"},
        )


def _repair(fold: _Fold, item: RetryStep | CompleteStep) -> None:
    """An operator's repair of an open step (a stuck or slow one): a retry stops the attempt
    out now and runs the next at once, past the step's own `max_attempts` if need be; a
    completion stops it and hands the code the output given, as if the step had returned it."""
    state = fold.state
    open_step = state.steps[item.step]
    execution_id = code_step_execution_id(state.workflow_id, state.run, open_step.position)
    stop = {"step": item.step, "execution_id": execution_id, "attempt": open_step.attempt}
    if isinstance(item, CompleteStep):
        repaired = {"action": "complete", "cancel_execution": stop}
        fold.emit("step_repaired", item.step, open_step.attempt, item.actor, repaired)
        fold.step_outcome(StepSucceeded(item.at_ms, item.step, open_step.attempt, item.output))
        return
    again = open_step.attempt + 1
    scheduled = next(
        e for e in state.history if e.type == "step_scheduled" and e.position == open_step.position
    )
    fold.emit(
        "step_repaired",
        item.step,
        again,
        item.actor,
        {
            "action": "retry",
            "execution_id": execution_id,
            "cancel_execution": stop,
            "schedule_step": _schedule(item.step, again, execution_id, scheduled, fold.at_ms),
        },
        steps={
            **state.steps,
            item.step: replace(
                open_step, attempt=again, max_attempts=max(open_step.max_attempts, again)
            ),
        },
    )


def decide(state: CodeState, definition: CodeWorkflowDefinition, item: Input) -> Decided:
    """The state after `item`, its events, and the status after each."""
    check_pinned(state, definition)
    fold = _Fold(state, definition, item.at_ms)
    _decide(fold, item)
    return Decided(fold.state, fold.events, fold.statuses)
