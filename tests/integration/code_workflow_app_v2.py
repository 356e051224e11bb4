"""The next version of `code_workflow_app`, as a careless change would make it: its third
step renamed (`pack` is now `box`), in the middle of the run. The deploy gate must report every
open instance that already ran `pack`. The other steps are the first version's own."""

from __future__ import annotations

from typing import Any

from tests.integration.code_workflow_app import (
    authorize,
    capture_payment,
    notify,
    release_authorization,
    reserve_inventory,
)
from tickwheel.sdk import PermanentError, WorkflowContext, step, workflow


@step
async def box(reservation: str) -> str:
    return f"parcel-{reservation}"


@workflow("code_order")
async def code_order(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    ctx.on_rollback(release_authorization, auth)
    reservation = await ctx.run(reserve_inventory, order)
    parcel = await ctx.run(box, reservation)
    await ctx.sleep(order.get("nap", "2s"))
    decision = await ctx.wait_signal("approval", timeout=order.get("patience", "60s"))
    if not decision or not decision.get("approved"):
        raise PermanentError(f"not approved: {decision}")
    await ctx.run(notify, order, f"{parcel} approved by {decision.get('by')}")
    return await ctx.run(capture_payment, auth)
