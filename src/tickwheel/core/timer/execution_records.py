"""The records the owner of an execution writes about it besides its events: the dead letter of
an execution that gave up, and the `fenced` record of a write it refused. Pure."""

from __future__ import annotations

import json

from tickwheel.records import DeadLetter, ExecutionEvent, ExecutionRequest


def execution_dead_letter(
    request: ExecutionRequest, attempt: int, reason: str, error: str | None, now_ms: int
) -> DeadLetter:
    """The `DeadLetter` of the execution `request` stands for, given up at `attempt`. One per
    execution: the history sink de-duplicates it if a restore writes it again."""
    return {
        "dead_letter_id": f"dlq:{request['execution_id']}",
        "event_time": now_ms,
        "reason": reason,
        "source_topic": f"executions.{request['priority']}",
        "source_partition": -1,
        "source_offset": -1,
        "execution_id": request["execution_id"],
        "job_id": request["job_id"],
        "attempt": attempt,
        "error": error,
        "payload": request["payload"],
        "raw_value": None,
    }


def fenced_event(event: ExecutionEvent, now_ms: int, current_attempt: int | None) -> ExecutionEvent:
    """The `fenced` record of a worker's event that was not applied (a stale attempt, a second
    worker on the same attempt, an execution no longer in flight)."""
    fenced: ExecutionEvent = {
        **event,
        "event_id": f"timer:fenced:{event['event_id']}",
        "event_time": now_ms,
        "event_type": "fenced",
        "reason": f"stale {event['event_type']} of attempt {event['attempt']}",
        "details": json.dumps(
            {
                "fenced_event_id": event["event_id"],
                "current_attempt": current_attempt,
                "fenced_event_type": event["event_type"],
            }
        ),
    }
    return fenced
