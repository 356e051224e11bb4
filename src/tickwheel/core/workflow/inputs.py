"""What a workflow instance is told: the fold's only inputs, each with the time it was
received (`at_ms`, stamped once by whoever produced it), so the fold reads no clock.

Outcomes (`StepSucceeded`, `StepFailed`, `StepCancelled`) come from the timer, the one
judge of executions; `compensation=True` marks the outcome of a step's compensation
execution rather than of the step. Operator inputs carry an `actor`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

__all__ = [
    "INPUTS",
    "Approve",
    "Cancel",
    "ChildEnded",
    "CompleteStep",
    "Input",
    "Reassign",
    "Reject",
    "RetryStep",
    "Signal",
    "SkipStep",
    "Start",
    "StartChild",
    "StepCancelled",
    "StepFailed",
    "StepSucceeded",
    "TimerFired",
    "input_from_json",
    "input_to_json",
]


@dataclass(frozen=True, slots=True)
class Start:
    kind: ClassVar[str] = "start"
    at_ms: int
    input: Any = None


# Three families share their fields through a private base, so that what differs between
# the members is only their `kind` (and a field or two): each member stays its own type, the
# one the fold dispatches on, and the field order (positional construction, `asdict`'s JSON)
# is the base's fields, then the member's.


@dataclass(frozen=True, slots=True)
class _StepOutcome:
    """The timer's verdict on one attempt of a step's execution (or of its compensation's)."""

    at_ms: int
    step: str
    attempt: int


@dataclass(frozen=True, slots=True)
class StepSucceeded(_StepOutcome):
    kind: ClassVar[str] = "step_succeeded"
    output: Any = None
    compensation: bool = False


@dataclass(frozen=True, slots=True)
class StepFailed(_StepOutcome):
    kind: ClassVar[str] = "step_failed"
    error: str = ""
    permanent: bool = False
    compensation: bool = False


@dataclass(frozen=True, slots=True)
class StepCancelled(_StepOutcome):
    """The timer's verdict on an execution the fold asked it to cancel."""

    kind: ClassVar[str] = "step_cancelled"
    compensation: bool = False


@dataclass(frozen=True, slots=True)
class TimerFired:
    kind: ClassVar[str] = "timer_fired"
    at_ms: int
    timer_id: str


@dataclass(frozen=True, slots=True)
class _ApprovalDecision:
    """An assignee's decision on round `round` of an approval step."""

    at_ms: int
    step: str
    round: int
    actor: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Approve(_ApprovalDecision):
    kind: ClassVar[str] = "approve"


@dataclass(frozen=True, slots=True)
class Reject(_ApprovalDecision):
    kind: ClassVar[str] = "reject"


@dataclass(frozen=True, slots=True)
class Reassign:
    """Hand an approval to other people: a new round for `assignees` (the old round's links
    are dead from then on: a decision for it is fenced as `stale_round`)."""

    kind: ClassVar[str] = "reassign"
    at_ms: int
    step: str
    actor: str
    assignees: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # JSON gives a list; the input stays hashable and immutable.
        object.__setattr__(self, "assignees", tuple(self.assignees))


@dataclass(frozen=True, slots=True)
class Cancel:
    kind: ClassVar[str] = "cancel"
    at_ms: int
    actor: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class _StepRepair:
    """An operator's repair of one step (`core.workflow.repair`)."""

    at_ms: int
    step: str
    actor: str


@dataclass(frozen=True, slots=True)
class RetryStep(_StepRepair):
    kind: ClassVar[str] = "retry_step"


@dataclass(frozen=True, slots=True)
class CompleteStep(_StepRepair):
    kind: ClassVar[str] = "complete_step"
    output: Any = None


@dataclass(frozen=True, slots=True)
class SkipStep(_StepRepair):
    kind: ClassVar[str] = "skip_step"


@dataclass(frozen=True, slots=True)
class Signal:
    """A named signal for the instance (`ctx.wait_signal` of a workflow written as code,
    decision 0217). `signal_id` names the sending: a repeat of it counts once."""

    kind: ClassVar[str] = "signal"
    at_ms: int
    name: str
    signal_id: str
    payload: Any = None


@dataclass(frozen=True, slots=True)
class StartChild:
    """A start sent by a parent workflow written as code (`ctx.child`, decision 0218): the
    child learns its parent and the position in the parent's history its end answers."""

    kind: ClassVar[str] = "start_child"
    at_ms: int
    parent_id: str
    position: int
    input: Any = None
    run: int = 1  # the parent's run that started it: positions count from 1 in each run


@dataclass(frozen=True, slots=True)
class ChildEnded:
    """A child's end, told to its parent (decision 0218): `status` succeeded (with its
    `result`), failed or cancelled (with its `error`)."""

    kind: ClassVar[str] = "child_ended"
    at_ms: int
    child_id: str
    position: int
    status: str
    result: Any = None
    error: str | None = None
    run: int = 1  # the parent's run whose wait it answers


Input = (
    Start
    | StepSucceeded
    | StepFailed
    | StepCancelled
    | TimerFired
    | Approve
    | Reject
    | Cancel
    | RetryStep
    | CompleteStep
    | SkipStep
    | Reassign
    | Signal
    | StartChild
    | ChildEnded
)
INPUTS: dict[str, type[Input]] = {
    cls.kind: cls
    for cls in (
        Start,
        StepSucceeded,
        StepFailed,
        StepCancelled,
        TimerFired,
        Approve,
        Reject,
        Cancel,
        RetryStep,
        CompleteStep,
        SkipStep,
        Reassign,
        Signal,
        StartChild,
        ChildEnded,
    )
}


# What each kind's JSON may hold (its fields and "kind"), computed once: every input read is
# checked against it.
_FIELD_NAMES = {
    kind: frozenset({"kind", *(f.name for f in fields(cls))}) for kind, cls in INPUTS.items()
}


def input_to_json(item: Input) -> dict[str, Any]:
    """The input as a JSON object with its `kind` (golden histories, `workflows.inputs` data)."""
    out = {"kind": item.kind, **asdict(item)}
    if isinstance(item, Reassign):
        out["assignees"] = list(item.assignees)
    return out


def input_from_json(data: dict[str, Any]) -> Input:
    """The inverse of `input_to_json`; `ValueError` for an unknown kind or field."""
    cls = INPUTS.get(str(data.get("kind")))
    if cls is None:
        raise ValueError(f"unknown workflow input kind {data.get('kind')!r}; known: {list(INPUTS)}")
    extra = data.keys() - _FIELD_NAMES[cls.kind]
    if extra:
        raise ValueError(f"{cls.kind} has no field(s) {sorted(extra)}")
    return cls(**{k: v for k, v in data.items() if k != "kind"})
