"""The job type the worker chaos test runs (`--module tests.integration.worker_chaos_handlers`):
it holds its slot for `TICKWHEEL_TEST_HOLD_S` seconds (waking on cancellation), so the test
decides by environment which worker keeps its executions in flight and which finishes them."""

from __future__ import annotations

import os

from tickwheel.sdk.worker import ExecutionContext, job


@job("chaos_hold")
def hold(ctx: ExecutionContext) -> dict[str, float]:
    seconds = float(os.environ.get("TICKWHEEL_TEST_HOLD_S", "0"))
    ctx.wait(seconds)
    return {"held_s": seconds}
