"""What the engine needs to know about a workflow function and the steps it runs: plain data
attached to the functions by the SDK's `@workflow` and `@step` decorators."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tickwheel.core.codeflow.history import JsonObject
from tickwheel.core.retry import RetryPolicy

__all__ = [
    "STEP_ATTRIBUTE",
    "WORKFLOW_ATTRIBUTE",
    "StepInfo",
    "WorkflowSpec",
    "step_info_of",
    "workflow_spec_of",
]

# The attributes the decorators set on the functions they return (the functions themselves,
# still callable as they were).
STEP_ATTRIBUTE = "__tickwheel_step__"
WORKFLOW_ATTRIBUTE = "__tickwheel_workflow__"


@dataclass(frozen=True, slots=True)
class StepInfo:
    """A step's stable name and how it is run: the job retry semantics (full-jitter backoff,
    `max_attempts` in all, `permanent` exception types dead-letter at once) and a timeout per
    attempt. `ref` (`module:qualname`) is how a worker finds the function."""

    name: str
    ref: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_ms: int | None = None
    permanent: tuple[type[BaseException], ...] = ()
    # How long it usually takes: past it the watchdog calls it stuck (`workflow_step_stuck`).
    expected_ms: int | None = None

    def options_json(self) -> JsonObject:
        """What a step's scheduling records of how to run it (not compared on replay)."""
        options: JsonObject = {
            "ref": self.ref,
            "max_attempts": self.retry.max_attempts,
            "base_ms": self.retry.base_ms,
            "cap_ms": self.retry.cap_ms,
            "timeout_ms": self.timeout_ms,
        }
        if self.expected_ms is not None:  # absent otherwise: histories stay as they were
            options["expected_ms"] = self.expected_ms
        return options


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    """A workflow function (`async def f(ctx, input)`) under its stable `name`.
    `compensate_on_cancel`: a cancelled instance runs its rollbacks (the default)."""

    name: str
    fn: Callable[..., Awaitable[Any]]
    compensate_on_cancel: bool = True


def _ref(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def step_info_of(fn: Callable[..., Any], name: str | None = None) -> StepInfo:
    """The step a function stands for: its `@step` info, else a step named after the
    function (`__name__`, as `@step` names it) with the default retry policy. `name`, when given, overrides the name."""
    info = getattr(fn, STEP_ATTRIBUTE, None)
    if not isinstance(info, StepInfo):
        derived = getattr(fn, "__name__", None)
        if not derived:
            raise TypeError(f"a step is a function; got {fn!r}")
        info = StepInfo(name=str(derived), ref=_ref(fn))
    if name is not None and name != info.name:
        info = replace(info, name=name)
    return info


def workflow_spec_of(workflow: object) -> WorkflowSpec:
    """The spec of a `@workflow` function (or a spec given as is)."""
    if isinstance(workflow, WorkflowSpec):
        return workflow
    spec = getattr(workflow, WORKFLOW_ATTRIBUTE, None)
    if not isinstance(spec, WorkflowSpec):
        raise TypeError(f"{workflow!r} is not a workflow; decorate it with @workflow('name')")
    return spec
