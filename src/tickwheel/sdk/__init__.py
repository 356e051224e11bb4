"""tickwheel's public SDK: what job authors and producers import.

    from tickwheel.sdk import ExecutionContext, JobsClient, PermanentError, cancel, job, preview

    @job("send-invoice", lease_seconds=60)
    def send_invoice(ctx: ExecutionContext) -> dict[str, str]:
        ...

    JobsClient().create({"jobId": "invoices", "type": "send-invoice", "cron": "0 9 * * *"})
    preview("0 9 * * *", "Europe/London", from_ms=0, count=3)
    cancel(execution_id)

Workflows written as code (docs/workflows-code.md): `@workflow("name")` on an
`async def f(ctx: WorkflowContext, input)`, `@step(...)` on what it runs with `ctx.run`.

Everything in `__all__` is the supported surface (a test pins it); the modules behind it
(`tickwheel.sdk.worker`, `.jobs`, `.schedule`, `.executions`) hold more for the services and
may change. Execution is at least once: handlers must be idempotent on `execution_id`
(docs/job-authors.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tickwheel.core.errors import InvalidSchedule
    from tickwheel.core.preview import PreviewRow, preview
    from tickwheel.errors import InvalidInput, TickwheelError
    from tickwheel.sdk.code_workflows import (
        ChildFailed,
        Divergence,
        NondeterministicWorkflow,
        StepFailed,
        WorkflowContext,
        step,
        workflow,
    )
    from tickwheel.sdk.executions import cancel
    from tickwheel.sdk.jobs import JobExists, JobsClient, UnknownJob
    from tickwheel.sdk.worker import (
        ExecutionCancelled,
        ExecutionContext,
        PermanentError,
        RetryableError,
        job,
    )

# Names resolve on first use (PEP 562): a handler module importing `job` should not pay
# for the Kafka client and the Avro codec, and nothing here ever loads the ClickHouse client.
_SOURCES: dict[str, str] = {
    "ChildFailed": "tickwheel.sdk.code_workflows",
    "Divergence": "tickwheel.sdk.code_workflows",
    "ExecutionCancelled": "tickwheel.sdk.worker",
    "ExecutionContext": "tickwheel.sdk.worker",
    "InvalidInput": "tickwheel.errors",
    "InvalidSchedule": "tickwheel.core.errors",
    "JobExists": "tickwheel.sdk.jobs",
    "JobsClient": "tickwheel.sdk.jobs",
    "NondeterministicWorkflow": "tickwheel.sdk.code_workflows",
    "PermanentError": "tickwheel.sdk.worker",
    "PreviewRow": "tickwheel.core.preview",
    "RetryableError": "tickwheel.sdk.worker",
    "StepFailed": "tickwheel.sdk.code_workflows",
    "TickwheelError": "tickwheel.errors",
    "UnknownJob": "tickwheel.sdk.jobs",
    "WorkflowContext": "tickwheel.sdk.code_workflows",
    "cancel": "tickwheel.sdk.executions",
    "job": "tickwheel.sdk.worker",
    "preview": "tickwheel.core.preview",
    "step": "tickwheel.sdk.code_workflows",
    "workflow": "tickwheel.sdk.code_workflows",
}

__all__ = [
    "ChildFailed",
    "Divergence",
    "ExecutionCancelled",
    "ExecutionContext",
    "InvalidInput",
    "InvalidSchedule",
    "JobExists",
    "JobsClient",
    "NondeterministicWorkflow",
    "PermanentError",
    "PreviewRow",
    "RetryableError",
    "StepFailed",
    "TickwheelError",
    "UnknownJob",
    "WorkflowContext",
    "cancel",
    "job",
    "preview",
    "step",
    "workflow",
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
