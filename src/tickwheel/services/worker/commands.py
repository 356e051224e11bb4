"""Publishing control records to the workers (`executions.control`), for the CLI and the API."""

from __future__ import annotations

import uuid
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.clock import Clock, SystemClock
from tickwheel.errors import InvalidInput
from tickwheel.topology import topic_name


def cancel_record(
    execution_id: str,
    *,
    now_ms: int,
    job_id: str | None = None,
    reason: str | None = None,
    control_id: str | None = None,
) -> dict[str, Any]:
    """An `ExecutionControl` record cancelling `execution_id` (every attempt of it)."""
    if not execution_id or not execution_id.strip():
        raise InvalidInput("execution_id", "required: the id of the execution to cancel")
    return {
        "control_id": control_id or str(uuid.uuid4()),
        "execution_id": execution_id,
        "job_id": job_id,
        "kind": "cancel",
        "requested_at": now_ms,
        "reason": reason,
    }


def request_cancel(
    execution_id: str,
    *,
    job_id: str | None = None,
    reason: str | None = None,
    bootstrap: str | None = None,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """Tell every worker to cancel `execution_id`: a queued attempt never starts, a running one
    sees its cancellation signal. Returns the published record once the broker has it."""
    record = cancel_record(
        execution_id,
        now_ms=int((clock or SystemClock()).now() * 1000),
        job_id=job_id,
        reason=reason,
    )
    producer = EventProducer(bootstrap)
    producer.send(
        topic_name("executions.control"), execution_id, encode("ExecutionControl", record)
    )
    producer.flush()
    return record
