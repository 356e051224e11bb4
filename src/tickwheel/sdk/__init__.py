"""tickwheel's public SDK: what job authors and producers import.

    from tickwheel.sdk import ExecutionContext, JobsClient, PermanentError, cancel, job, preview

    @job("send-invoice", lease_seconds=60)
    def send_invoice(ctx: ExecutionContext) -> dict[str, str]:
        ...

    JobsClient().create({"jobId": "invoices", "type": "send-invoice", "cron": "0 9 * * *"})
    preview("0 9 * * *", "Europe/London", from_ms=0, count=3)
    cancel(execution_id)

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
    "ExecutionCancelled": "tickwheel.sdk.worker",
    "ExecutionContext": "tickwheel.sdk.worker",
    "InvalidInput": "tickwheel.errors",
    "InvalidSchedule": "tickwheel.core.errors",
    "JobExists": "tickwheel.sdk.jobs",
    "JobsClient": "tickwheel.sdk.jobs",
    "PermanentError": "tickwheel.sdk.worker",
    "PreviewRow": "tickwheel.core.preview",
    "RetryableError": "tickwheel.sdk.worker",
    "TickwheelError": "tickwheel.errors",
    "UnknownJob": "tickwheel.sdk.jobs",
    "cancel": "tickwheel.sdk.executions",
    "job": "tickwheel.sdk.worker",
    "preview": "tickwheel.core.preview",
}

__all__ = [
    "ExecutionCancelled",
    "ExecutionContext",
    "InvalidInput",
    "InvalidSchedule",
    "JobExists",
    "JobsClient",
    "PermanentError",
    "PreviewRow",
    "RetryableError",
    "TickwheelError",
    "UnknownJob",
    "cancel",
    "job",
    "preview",
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
