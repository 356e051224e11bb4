"""The author's module the worker's code-workflow units load (`--module`): an order workflow
of two steps around a durable sleep, and steps of each kind the worker runs (sync, async,
failing permanently or not). `STARTS` and `CALLS` count what ran, so a test can tell a feed of
new events from a replay of the whole history."""

from __future__ import annotations

from json import dumps  # noqa: F401  (re-exported on purpose: a ref to it must be refused)
from typing import Any

from tickwheel.sdk import PermanentError, WorkflowContext, step, workflow

# Each call of the workflow function: a fresh run starts it once and replays from the top.
STARTS: list[str] = []
# Each call of a step function, by step name.
CALLS: list[str] = []


class CardDeclined(Exception):
    """A failure the `charge` step declares permanent."""


@step(permanent=(CardDeclined,))
def charge(order: dict[str, Any]) -> dict[str, Any]:
    CALLS.append("charge")
    if order.get("decline"):
        raise CardDeclined(f"card of order {order['id']} declined")
    if order.get("flaky"):
        raise ConnectionError("payment gateway unreachable")
    if order.get("refuse"):
        raise PermanentError(f"order {order['id']} is refused")
    return {"charged": order["amount"]}


@step
async def ship(charged: dict[str, Any]) -> str:
    CALLS.append("ship")
    return f"parcel-{charged['charged']}"


def plain(value: int) -> int:
    """A step need not be decorated: `ctx.run(plain, ...)` runs it under its own name."""
    CALLS.append("plain")
    return value * 2


class Tools:
    @staticmethod
    def twice(value: int) -> int:
        return value * 2


@workflow("unit_order", check=False)  # STARTS.append is the test's probe, not workflow logic
async def unit_order(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
    STARTS.append(ctx.workflow_id)
    charged = await ctx.run(charge, order)
    ctx.set_status({"charged": charged["charged"]})
    await ctx.sleep("1h")
    parcel = await ctx.run(ship, charged)
    return {"parcel": parcel}
