"""An `async def` job type for the worker's event-loop tests
(`--module tests.integration.worker_async_handlers`)."""

from __future__ import annotations

import asyncio

from tickwheel.sdk.worker import ExecutionContext, job


@job("async_wait")
async def wait(ctx: ExecutionContext) -> dict[str, float]:
    """Waits `seconds` on the event loop (waking on cancellation), then returns."""
    steps = round(float(ctx.payload.get("seconds", 0)) / 0.05)
    done = 0
    while done < steps and not ctx.cancelled:
        await asyncio.sleep(0.05)
        done += 1
    return {"waited": round(done * 0.05, 2)}
