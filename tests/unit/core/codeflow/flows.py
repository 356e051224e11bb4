"""Workflows the golden histories were recorded with, and the changed versions of them that
replay against those histories (a renamed step, reordered steps, a changed input, a step added
in the middle or at the end, a change guarded by `ctx.patched`)."""

from __future__ import annotations

import asyncio
from typing import Any

from tickwheel.sdk import PermanentError, WorkflowContext, step, workflow


@step(max_attempts=3, timeout="30s")
async def authorize(order: dict[str, Any]) -> dict[str, Any]:
    return {"auth": f"auth-{order['id']}", "amount": order["amount"]}


@step
async def release_authorization(auth: dict[str, Any]) -> None:
    return None


@step
async def reserve_inventory(order: dict[str, Any]) -> str:
    return f"reservation-{order['id']}"


@step(name="reserve_inventory")
async def reserve_stock(order: dict[str, Any]) -> str:
    """The same step under a new function name: its explicit name keeps its identity."""
    return f"reservation-{order['id']}"


@step
async def release_inventory(reservation: str) -> None:
    return None


@step
async def capture_payment(auth: dict[str, Any]) -> dict[str, Any]:
    return {"captured": auth["amount"]}


@step
async def notify(order: dict[str, Any]) -> str:
    return "sent"


@step
async def audit(order: dict[str, Any]) -> str:
    return "audited"


@step(max_attempts=2, backoff="1s", max_backoff="1s")
async def decline(order: dict[str, Any]) -> None:
    raise PermanentError("card declined")


@step
async def price(item: str) -> int:
    return {"a": 3, "b": 4, "c": 5}[item]


# -- the happy path: three steps --------------------------------------------------------------


@workflow("order")
async def order(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    await ctx.run(reserve_inventory, order)
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_renamed(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    await ctx.run(reserve_inventory, order, name="hold_inventory")
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_renamed_function(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    await ctx.run(reserve_stock, order)  # a new function, the same step name: no divergence
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_reordered(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    await ctx.run(reserve_inventory, order)
    auth = await ctx.run(authorize, order)
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_changed_input(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, {**order, "amount": order["amount"] * 2})
    await ctx.run(reserve_inventory, order)
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_added_in_middle(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    await ctx.run(audit, order)
    await ctx.run(reserve_inventory, order)
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_added_at_end(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    await ctx.run(reserve_inventory, order)
    captured = await ctx.run(capture_payment, auth)
    await ctx.run(notify, order)
    return captured


@workflow("order")
async def order_missing_step(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    return await ctx.run(capture_payment, auth)


@workflow("order")
async def order_patched(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    if ctx.patched("audit-before-reserve"):
        await ctx.run(audit, order)
    await ctx.run(reserve_inventory, order)
    return await ctx.run(capture_payment, auth)


# -- parallel steps ---------------------------------------------------------------------------


@workflow("basket")
async def basket(ctx: WorkflowContext, items: list[str]) -> int:
    prices = await asyncio.gather(*(ctx.run(price, item) for item in items))
    return sum(prices)


# -- time, signals, side effects --------------------------------------------------------------


@workflow("approval")
async def approval(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    started = ctx.now()
    await ctx.sleep("24h")
    ctx.set_status({"stage": "waiting for approval"})
    decision = await ctx.wait_signal("approval", timeout="72h")
    ctx.set_status({"stage": "decided"})
    return {
        "decision": decision,
        "started": started.isoformat(),
        "token": str(ctx.uuid4()),
        "draw": ctx.random(),
    }


@workflow("two_signals")
async def two_signals(ctx: WorkflowContext, _: Any) -> list[Any]:
    first = await ctx.wait_signal("item")
    second = await ctx.wait_signal("item", timeout="1h")
    return [first, second]


# -- sagas ------------------------------------------------------------------------------------


@workflow("saga")
async def saga(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    ctx.on_rollback(release_authorization, auth)
    reservation = await ctx.run(reserve_inventory, order)
    ctx.on_rollback(release_inventory, reservation)
    await ctx.sleep("1h")
    await ctx.run(decline, order)
    return await ctx.run(capture_payment, auth)


@workflow("saga_no_cancel_compensation", compensate_on_cancel=False)
async def saga_no_cancel_compensation(ctx: WorkflowContext, order: dict[str, Any]) -> None:
    auth = await ctx.run(authorize, order)
    ctx.on_rollback(release_authorization, auth)
    await ctx.sleep("1h")


# -- children and continue-as-new -------------------------------------------------------------


@workflow("parent")
async def parent(ctx: WorkflowContext, orders: list[dict[str, Any]]) -> list[Any]:
    return [await ctx.child(order, o) for o in orders]


@workflow("counter")
async def counter(ctx: WorkflowContext, count: int) -> int:
    await ctx.sleep("1d")
    if count < 3:
        ctx.continue_as_new(count + 1)
    return count


ALL = [
    order,
    basket,
    approval,
    two_signals,
    saga,
    saga_no_cancel_compensation,
    parent,
    counter,
]
