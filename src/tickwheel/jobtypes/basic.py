"""The built-in job types for demos, tests and operators (DESIGN §13): `noop`, `sleep`, `fail`."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk.worker import ExecutionContext, PermanentError, RetryableError

MAX_SLEEP_SECONDS = 24 * 3600.0


def noop(ctx: ExecutionContext) -> None:
    """Do nothing and succeed."""
    return None


def sleep(ctx: ExecutionContext) -> dict[str, Any]:
    """Sleep `{"seconds": s}`, heartbeating meanwhile; stops early when cancelled."""
    seconds = ctx.payload.get("seconds", 1)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise PermanentError(f'sleep: "seconds" must be a number, got {seconds!r}')
    if not 0 <= seconds <= MAX_SLEEP_SECONDS:
        raise PermanentError(f'sleep: "seconds" must be within [0, {MAX_SLEEP_SECONDS:.0f}]')
    # The worker heartbeats on its own while we wait; the wait wakes on cancellation.
    cancelled = ctx.wait(float(seconds))
    return {"slept": seconds, "cancelled": cancelled}


def fail(ctx: ExecutionContext) -> dict[str, Any]:
    """Fail the first `times` attempts (every attempt when absent) with
    `{"mode": "retryable"|"permanent"}`; succeed after that."""
    mode = ctx.payload.get("mode", "retryable")
    if mode not in ("retryable", "permanent"):
        raise PermanentError(f'fail: "mode" must be "retryable" or "permanent", got {mode!r}')
    times = ctx.payload.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 0):
        raise PermanentError(f'fail: "times" must be a whole number >= 0, got {times!r}')
    if times is None or ctx.attempt <= times:
        limit = "every attempt" if times is None else f"the first {times} attempt(s)"
        message = f"fail: attempt {ctx.attempt} fails on purpose ({mode}, {limit})"
        if mode == "permanent":
            raise PermanentError(message)
        raise RetryableError(message)
    return {"succeeded_on_attempt": ctx.attempt}
