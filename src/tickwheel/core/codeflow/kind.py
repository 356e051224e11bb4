"""`CodeKind`: workflows written as code as the orchestrator folds them (decision 0217), pure:
the kind's entry in `KINDS` over its state (`state.py`) and its fold (`fold.py`), and what a
recorded event says — the commands it stands for (`code_effects`, from its data alone) and,
for the history events, the engine history they rebuild (`histories_from_events`, what the
deploy gate replays)."""

from __future__ import annotations

from collections.abc import Iterable

from tickwheel.core.codeflow.definition import CODE_KIND, CodeWorkflowDefinition
from tickwheel.core.codeflow.fold import decide
from tickwheel.core.codeflow.history import COMMANDS as HISTORY_COMMANDS
from tickwheel.core.codeflow.history import INPUTS as HISTORY_INPUTS
from tickwheel.core.codeflow.history import (
    HistoryEvent,
)
from tickwheel.core.codeflow.state import CodeState, state_from_json, state_to_json
from tickwheel.core.codeflow.tasks import (
    EFFECT_KEYS,
)
from tickwheel.core.workflow.deciding import Decided
from tickwheel.core.workflow.events import (
    CancelExecution,
    CancelTimer,
    ClearAlert,
    Command,
    Event,
    RaiseAlert,
    ScheduleStep,
    StartTimer,
    sent_inputs,
)
from tickwheel.core.workflow.inputs import (
    Input,
)
from tickwheel.core.workflow.snapshot import SnapshotJson

__all__ = ["MAX_ATTEMPTS_BOUND", "CodeKind", "code_effects", "histories_from_events"]

# A step's attempts (and a task's number, its `attempt`) are counted by the fold, which
# decides every retry: the timer only needs a bound no attempt reaches, so that it never
# dead-letters an attempt for its number (a permanent failure still is). Avro's int.
MAX_ATTEMPTS_BOUND = 2**31 - 1


def code_effects(event: Event) -> list[Command]:
    """The commands `event` stands for, in the order the services apply them (stop what
    ended, then start what began), read from its data alone."""
    data = event.data
    commands: list[Command] = []
    cancels = list(data.get("cancel_executions", ()))
    if data.get("cancel_execution") is not None:
        cancels.insert(0, data["cancel_execution"])
    commands.extend(CancelExecution(c["step"], c["execution_id"], c["attempt"]) for c in cancels)
    commands.extend(CancelTimer(timer_id) for timer_id in data.get("cancel_timers", ()))
    commands.extend(ClearAlert(alert) for alert in data.get("clear_alerts", ()))
    schedule = data.get("schedule_step")
    if schedule is not None:
        commands.append(
            ScheduleStep(
                schedule["step"],
                schedule["attempt"],
                schedule["execution_id"],
                schedule["job_type"],
                schedule["payload"],
                schedule["not_before_ms"],
            )
        )
    commands.extend(StartTimer(timer_id, at) for timer_id, at in data.get("start_timers", ()))
    alert = data.get("raise_alert")
    if alert is not None:
        commands.append(
            RaiseAlert(alert["alert_id"], alert["step"], alert["kind"], alert["message"])
        )
    commands.extend(sent_inputs(data))
    return commands


def histories_from_events(events: Iterable[Event]) -> list[list[HistoryEvent]]:
    """The engine history of each run of an instance, read back from its recorded events
    (`workflows.events`, in `seq` order): its history events, without the effects' keys,
    split where a run starts."""
    runs: list[list[HistoryEvent]] = []
    for event in events:
        if event.type not in HISTORY_INPUTS and event.type not in HISTORY_COMMANDS:
            continue
        raw = {k: v for k, v in event.data.items() if k not in EFFECT_KEYS}
        if event.type == "workflow_started":
            runs.append([])
        if not runs:
            raise ValueError(f"event {event.seq} ({event.type}) comes before any workflow_started")
        runs[-1].append(HistoryEvent.from_json(raw))
    return runs


class CodeKind:
    """Workflows written as Python code (decision 0217): the orchestrator's bookkeeping of
    their histories and tasks; the code runs in the workers."""

    name = CODE_KIND

    def owns(self, definition: object) -> bool:
        return isinstance(definition, CodeWorkflowDefinition)

    def owns_state(self, state: object) -> bool:
        return isinstance(state, CodeState)

    def initial(self, workflow_id: str, definition: CodeWorkflowDefinition) -> CodeState:
        return CodeState(workflow_id, definition.definition_id, definition.version)

    def decide(self, state: CodeState, definition: CodeWorkflowDefinition, item: Input) -> Decided:
        return decide(state, definition, item)

    def effects(self, event: Event) -> list[Command]:
        return code_effects(event)

    def max_attempts(
        self, definition: CodeWorkflowDefinition, step: str, compensation: bool
    ) -> int:
        return MAX_ATTEMPTS_BOUND

    def to_json(self, state: CodeState) -> SnapshotJson:
        return state_to_json(state)

    def from_json(self, data: SnapshotJson) -> CodeState:
        return state_from_json(data)
