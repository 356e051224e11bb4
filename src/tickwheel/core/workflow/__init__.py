"""Durable workflows, pure: definitions as data and an instance's state as a fold over its
events (docs/decisions/0059, docs/workflows.md).

* `definition` — `parse_definition` of the JSON body into a `WorkflowDefinition`.
* `compat` — `check_compatible(old, new, live_steps)`, the reasons N+1 may not follow N.
* `template` — step payload templates over the input and earlier outputs.
* `inputs` — what an instance is told (outcomes, timers, approvals, cancel, repairs).
* `events` — `Event`, the commands, and `effects(event) -> commands`.
* `state` — `WorkflowState`, `initial_state`, `evolve(state, event) -> state`.
* `fold` — `decide(state, definition, input) -> events`, and `step`, all three at once.
* `ids` — step execution ids (stable across attempts), timer and alert ids.
"""

from tickwheel.core.workflow.compat import check_compatible
from tickwheel.core.workflow.definition import (
    StepSpec,
    TaskSpec,
    WorkflowDefinition,
    parse_definition,
)
from tickwheel.core.workflow.events import (
    CancelExecution,
    CancelTimer,
    ClearAlert,
    Command,
    Event,
    OpenApproval,
    RaiseAlert,
    ScheduleCompensation,
    ScheduleStep,
    StartTimer,
    command_to_json,
    effects,
)
from tickwheel.core.workflow.fold import decide, step
from tickwheel.core.workflow.ids import step_execution_id
from tickwheel.core.workflow.inputs import (
    Approve,
    Cancel,
    CompleteStep,
    Input,
    Reassign,
    Reject,
    RetryStep,
    SkipStep,
    Start,
    StepCancelled,
    StepFailed,
    StepSucceeded,
    TimerFired,
    input_from_json,
    input_to_json,
)
from tickwheel.core.workflow.state import (
    MAX_OUTPUT_BYTES,
    TERMINAL,
    StepState,
    WorkflowState,
    evolve,
    initial_state,
)

__all__ = [
    "MAX_OUTPUT_BYTES",
    "TERMINAL",
    "Approve",
    "Cancel",
    "CancelExecution",
    "CancelTimer",
    "ClearAlert",
    "Command",
    "CompleteStep",
    "Event",
    "Input",
    "OpenApproval",
    "RaiseAlert",
    "Reassign",
    "Reject",
    "RetryStep",
    "ScheduleCompensation",
    "ScheduleStep",
    "SkipStep",
    "Start",
    "StartTimer",
    "StepCancelled",
    "StepFailed",
    "StepSpec",
    "StepState",
    "StepSucceeded",
    "TaskSpec",
    "TimerFired",
    "WorkflowDefinition",
    "WorkflowState",
    "check_compatible",
    "command_to_json",
    "decide",
    "effects",
    "evolve",
    "initial_state",
    "input_from_json",
    "input_to_json",
    "parse_definition",
    "step",
    "step_execution_id",
]
