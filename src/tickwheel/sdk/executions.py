"""Acting on one execution from outside the worker: cancel it.

    from tickwheel.sdk import cancel
    cancel("3f0c…", reason="the customer closed the account")

A cancel is an `ExecutionControl` record on `executions.control`, a topic every worker reads
(decision 0042): a queued attempt of the execution never starts (its outcome is recorded as
cancelled), and a running handler sees `ctx.cancelled` set. Cancelling is at most a request:
an attempt that already finished stays finished.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from tickwheel.clock import Clock, SystemClock
from tickwheel.errors import InvalidInput

if TYPE_CHECKING:  # annotations only: importing the SDK stays cheap
    from tickwheel.records import ExecutionControl

__all__ = ["cancel", "cancel_record", "require_execution_id"]


def require_execution_id(execution_id: str) -> str:
    """`execution_id` itself; `InvalidInput` when it is empty or blank."""
    if not execution_id or not execution_id.strip():
        raise InvalidInput("execution_id", "required: the id of the execution to cancel")
    return execution_id


def cancel_record(
    execution_id: str,
    *,
    now_ms: int,
    job_id: str | None = None,
    reason: str | None = None,
    control_id: str | None = None,
) -> ExecutionControl:
    """The `ExecutionControl` record that cancels `execution_id` (every attempt of it).

    Raises `InvalidInput` when `execution_id` is empty or blank.
    """
    require_execution_id(execution_id)
    return {
        "control_id": control_id or str(uuid.uuid4()),
        "execution_id": execution_id,
        "job_id": job_id,
        "kind": "cancel",
        "requested_at": now_ms,
        "reason": reason,
        "attempt": None,  # every attempt: only the timer's cancel of a step names one (0092)
    }


def cancel(
    execution_id: str,
    *,
    job_id: str | None = None,
    reason: str | None = None,
    bootstrap: str | None = None,
    clock: Clock | None = None,
) -> ExecutionControl:
    """Ask every worker to cancel `execution_id`; returns the record once the broker has it.

    `job_id` and `reason` are recorded with the instruction (and the reason with the
    cancelled outcome). `bootstrap` is the cluster's address; None reads
    `KAFKA_BOOTSTRAP_SERVERS`, else the running local stack's (`TICKWHEEL_TOPIC_PREFIX`
    names the topic prefix).
    """
    record = cancel_record(
        execution_id,
        now_ms=int((clock or SystemClock()).now() * 1000),
        job_id=job_id,
        reason=reason,
    )
    # Imported here so that `import tickwheel.sdk` stays cheap for handler modules and
    # previews, which never publish.
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.topology import topic_name

    producer = EventProducer(bootstrap)
    producer.send(
        topic_name("executions.control"), execution_id, encode("ExecutionControl", record)
    )
    producer.flush()
    return record
