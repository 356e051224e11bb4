"""Job types the workflow tests' workers run (`--module tests.integration.workflow_handlers`)."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk.worker import ExecutionContext, PermanentError, RetryableError, job


@job("wf_echo")
def echo(ctx: ExecutionContext) -> dict[str, Any]:
    """Returns its payload and where it ran: the step's output."""
    return {**ctx.payload, "workflow_id": ctx.workflow_id, "step_id": ctx.step_id,
            "execution_id": ctx.execution_id, "attempt": ctx.attempt}  # fmt: skip


@job("wf_fail")
def fail(ctx: ExecutionContext) -> dict[str, Any]:
    """Fails its first `times` attempts (every one when absent), `mode` permanent or not."""
    times = ctx.payload.get("times")
    if times is None or ctx.attempt <= int(times):
        if ctx.payload.get("mode") == "permanent":
            raise PermanentError(f"wf_fail: attempt {ctx.attempt} fails for good")
        raise RetryableError(f"wf_fail: attempt {ctx.attempt} fails")
    return {"attempt": ctx.attempt}


@job("wf_hold_first")
def hold_first(ctx: ExecutionContext) -> dict[str, Any]:
    """Attempt 1 runs until it is cancelled (up to a minute); a later attempt returns at once:
    a step retried while it runs."""
    if ctx.attempt == 1:
        ctx.wait(60)
        ctx.raise_if_cancelled()
    return {"attempt": ctx.attempt}
