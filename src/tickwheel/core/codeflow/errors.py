"""What replaying a code workflow can raise: to the engine's caller (a divergence, a call the
workflow code may not make) and inside the workflow code (a step or child that failed)."""

from __future__ import annotations

from typing import Any

from tickwheel.errors import TickwheelError

__all__ = [
    "ChildFailed",
    "ContinueAsNew",
    "Divergence",
    "NondeterministicCall",
    "StepFailed",
    "WorkflowStuck",
]


class Divergence(TickwheelError, RuntimeError):
    """The workflow code no longer does what its history recorded: a different step, a
    different input, a step missing. The instance is parked, never continued silently.

    `workflow` and `workflow_id` name the instance, `step` the step (`name#occurrence`) or
    other command at stake, `index` the position of the recorded event in the history list
    (None when the history ended first), `detail` what differs.
    """

    def __init__(
        self, workflow: str, workflow_id: str, step: str, index: int | None, detail: str
    ) -> None:
        where = "after the end of its history" if index is None else f"at history event {index}"
        super().__init__(
            f"workflow {workflow!r} (instance {workflow_id}) diverged from its history {where}"
            f" ({step}): {detail}; fix the code or guard the change with "
            "ctx.patched('change-id')"
        )
        self.workflow = workflow
        self.workflow_id = workflow_id
        self.step = step
        self.index = index
        self.detail = detail


class NondeterministicCall(TickwheelError, RuntimeError):
    """Workflow code read the clock, slept for real, started a thread, or touched a file or
    the network while being replayed. `call` says what, `instead` what to use."""

    def __init__(self, call: str, instead: str) -> None:
        super().__init__(f"workflow code may not call {call}; {instead}")
        self.call = call
        self.instead = instead


class WorkflowStuck(TickwheelError, RuntimeError):
    """Workflow code ran too many loop turns without waiting on anything durable (a busy
    loop): `turns` is the limit it hit."""

    def __init__(self, workflow: str, turns: int) -> None:
        super().__init__(
            f"workflow {workflow!r} ran {turns} loop turns without awaiting a step, timer or "
            "signal; a loop in workflow code must await ctx.run, ctx.sleep or ctx.wait_signal"
        )
        self.workflow = workflow
        self.turns = turns


class StepFailed(TickwheelError, RuntimeError):
    """Raised in workflow code by `await ctx.run(...)` when the step failed finally (a
    permanent error, or its attempts exhausted). `step` is `name#occurrence`."""

    def __init__(self, step: str, error: str, error_kind: str, attempts: int) -> None:
        super().__init__(f"step {step} failed ({error_kind}, {attempts} attempt(s)): {error}")
        self.step = step
        self.error = error
        self.error_kind = error_kind
        self.attempts = attempts


class ChildFailed(TickwheelError, RuntimeError):
    """Raised in workflow code by `await ctx.child(...)` when the child workflow failed or
    was cancelled."""

    def __init__(self, workflow_id: str, error: str) -> None:
        super().__init__(f"child workflow {workflow_id} failed: {error}")
        self.workflow_id = workflow_id
        self.error = error


class ContinueAsNew(BaseException):
    """Raised by `ctx.continue_as_new(input)`: ends this run and starts the next one of the
    same instance with `input` and an empty history. A `BaseException`, so an
    `except Exception` in workflow code does not swallow it."""

    def __init__(self, input: Any) -> None:
        super().__init__("continue as new")
        self.input = input
