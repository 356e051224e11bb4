"""How a transaction ended, for the services that write their batches in transactions: the
timer and the orchestrator (one per partition) and the job writer (one per poll over all its
partitions, decision 0178). The outcome and the one way a failure is handled, so the three
cannot drift on what a fence means."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Literal

from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.adapters.kafka.producer import is_fatal

Outcome = Literal["committed", "fenced", "failed"]


@dataclass(frozen=True)
class Written:
    outcome: Outcome
    seconds: float  # begin to the end of commit (or of the failure)


def failure(producer: object, exc: KafkaException, partition: int, log: logging.Logger) -> Outcome:
    """How a transaction that raised ended: fenced (a new owner took the partition: drop it
    until the group says it is ours) or failed (aborted here, and the caller restores the
    partition from what was committed)."""
    fenced = is_fatal(exc)
    log.warning(
        "fenced; dropping the partition" if fenced else "transaction failed; restoring",
        extra={
            "action": "producer_fenced" if fenced else "transaction_failed",
            "partition": partition,
            "error": str(exc),
        },
    )
    if not fenced:
        with contextlib.suppress(KafkaException):
            producer.abort()  # type: ignore[attr-defined]
    return "fenced" if fenced else "failed"


def ended_in_failure(
    producer: object, exc: KafkaException, partition: int, started: float, log: logging.Logger
) -> Written:
    """`failure`, with how long the transaction took."""
    return Written(failure(producer, exc, partition, log), time.monotonic() - started)
