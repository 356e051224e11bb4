"""Workflows written as code, pure: the deterministic replay engine (decision 0216,
docs/workflows-code.md).

* `history` — `HistoryEvent`: a run's history, inputs and commands, as JSON.
* `spec` — `WorkflowSpec` and `StepInfo`, what `@workflow` and `@step` attach to functions.
* `loop` — `DeterministicLoop`: asyncio without a clock, timers, threads or I/O.
* `context` — `WorkflowContext`, the author's handle on the history.
* `engine` — `WorkflowRun.feed(history) -> Activation` and `replay`; `Divergence` on a mismatch.
* `kind` — `CodeKind`, the orchestrator's fold of code workflows (decision 0217): histories
  and workflow tasks, no code run.
* `errors` — `Divergence`, `NondeterministicCall`, `StepFailed`, `ChildFailed`, `ContinueAsNew`.
"""

from tickwheel.core.codeflow.context import Duration, WorkflowContext, duration_ms
from tickwheel.core.codeflow.engine import Activation, WorkflowRun, describe, replay
from tickwheel.core.codeflow.errors import (
    ChildFailed,
    ContinueAsNew,
    Divergence,
    NondeterministicCall,
    StepFailed,
    WorkflowStuck,
)
from tickwheel.core.codeflow.history import (
    COMMANDS,
    ENDINGS,
    INPUTS,
    HistoryEvent,
    events_from_json,
    events_to_json,
)
from tickwheel.core.codeflow.kind import CodeKind, histories_from_events
from tickwheel.core.codeflow.loop import in_workflow_code, report_violation
from tickwheel.core.codeflow.spec import (
    STEP_ATTRIBUTE,
    WORKFLOW_ATTRIBUTE,
    StepInfo,
    WorkflowSpec,
    step_info_of,
    workflow_spec_of,
)
from tickwheel.core.codeflow.state import CodeState
from tickwheel.core.codeflow.tasks import (
    TASK_STEP,
    missed_answer,
    read_answer,
    read_task,
    task_answer,
)

__all__ = [
    "COMMANDS",
    "ENDINGS",
    "INPUTS",
    "STEP_ATTRIBUTE",
    "TASK_STEP",
    "WORKFLOW_ATTRIBUTE",
    "Activation",
    "ChildFailed",
    "CodeKind",
    "CodeState",
    "ContinueAsNew",
    "Divergence",
    "Duration",
    "HistoryEvent",
    "NondeterministicCall",
    "StepFailed",
    "StepInfo",
    "WorkflowContext",
    "WorkflowRun",
    "WorkflowSpec",
    "WorkflowStuck",
    "describe",
    "duration_ms",
    "events_from_json",
    "events_to_json",
    "histories_from_events",
    "in_workflow_code",
    "missed_answer",
    "read_answer",
    "read_task",
    "replay",
    "report_violation",
    "step_info_of",
    "task_answer",
    "workflow_spec_of",
]
