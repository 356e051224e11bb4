"""Job types of seed 000's `video_publish` workflow, for the API's acceptance tests
(`tickwheel worker --module tests.acceptance.api_handlers`)."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk.worker import ExecutionContext, job

# Bounds the stuck first attempt if no retry ever comes (the test's own wait is shorter).
STUCK_S = 120


@job("probe_source")
def probe_source(ctx: ExecutionContext) -> dict[str, Any]:
    return {"probed": True, "attempt": ctx.attempt}


@job("encode")
def encode(ctx: ExecutionContext) -> dict[str, Any]:
    """The first attempt hangs (heartbeating) until it is cancelled, as a stuck encoder does;
    a later attempt — an operator's retry — finishes at once."""
    if ctx.attempt == 1:
        for _ in range(STUCK_S):
            if ctx.wait(1.0):
                ctx.raise_if_cancelled()
            ctx.heartbeat()
    return {"encoded": "480p", "attempt": ctx.attempt, "execution_id": ctx.execution_id}
