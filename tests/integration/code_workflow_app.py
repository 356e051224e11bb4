"""The author's module the code-workflow tests load into a worker (`--module`): an order
workflow of five steps with a rollback, a durable sleep and a signal wait. The steps keep no
state: the recorded history and the execution events are what the tests judge."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk import PermanentError, WorkflowContext, step, workflow


@step(max_attempts=3, backoff="100ms", max_backoff="200ms")
async def authorize(order: dict[str, Any]) -> dict[str, Any]:
    return {"authorization": f"auth-{order['id']}", "amount": order["amount"]}


@step
def release_authorization(auth: dict[str, Any]) -> str:
    return f"released {auth['authorization']}"


@step(max_attempts=3)
async def reserve_inventory(order: dict[str, Any]) -> str:
    if not order.get("items"):
        raise PermanentError("an order needs items")
    return f"reservation-{order['id']}"


@step
async def pack(reservation: str) -> str:
    return f"parcel-{reservation}"


@step
async def notify(order: dict[str, Any], text: str) -> str:
    return f"told {order['id']}: {text}"


@step(max_attempts=5, backoff="100ms", max_backoff="500ms")
async def capture_payment(auth: dict[str, Any]) -> dict[str, Any]:
    return {"captured": auth["amount"]}


@workflow("code_order")
async def code_order(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    auth = await ctx.run(authorize, order)
    ctx.on_rollback(release_authorization, auth)
    reservation = await ctx.run(reserve_inventory, order)
    parcel = await ctx.run(pack, reservation)
    await ctx.sleep(order.get("nap", "2s"))
    decision = await ctx.wait_signal("approval", timeout=order.get("patience", "60s"))
    if not decision or not decision.get("approved"):
        raise PermanentError(f"not approved: {decision}")
    await ctx.run(notify, order, f"{parcel} approved by {decision.get('by')}")
    return await ctx.run(capture_payment, auth)


@workflow("code_child")
async def code_child(ctx: WorkflowContext, order: dict[str, Any]) -> str:
    reservation = await ctx.run(reserve_inventory, order)
    return await ctx.run(pack, reservation)


@workflow("code_parent")
async def code_parent(ctx: WorkflowContext, orders: list[dict[str, Any]]) -> list[str]:
    """Children, each an instance of its own (decision 0218): one per order, a failing one
    (no items) caught by the parent."""
    parcels = []
    for order in orders:
        try:
            parcels.append(await ctx.child(code_child, order))
        except Exception as exc:
            parcels.append(f"failed: {exc}")
    return parcels
