"""The workflows `bench_workflows.py --parts code` loads into its worker (`--module
bench._code_chain`): a chain of no-op steps written as code, the twin of the DAG chain the same
run measures, and a workflow that sleeps a day (the restore's open instances)."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk import WorkflowContext, step, workflow


@step
def noop(n: int) -> int:
    return n


@workflow("bench_code_chain")
async def bench_code_chain(ctx: WorkflowContext, steps: Any) -> int:
    total = 0
    for n in range(int(steps or 5)):
        total += await ctx.run(noop, n)
    return total


@workflow("bench_code_nap")
async def bench_code_nap(ctx: WorkflowContext, _input: Any) -> None:
    await ctx.sleep("1d")
