"""Decoded Kafka records → rows of the history tables. Pure: no I/O, no clock.

One function per topic family. Each returns the row for its table, with the ingestion
metadata (`source_topic`, `source_partition`, `source_offset`) filled in, and raises
`UnstorableRecord` for a record that decodes but cannot be stored (an instant outside what
`DateTime64(3)` holds): the sink dead-letters it instead of failing the whole batch forever.

Every row's `event_id` is deterministic for the record (decision 0030): the event's own id,
or one derived from what identifies the record when it has none (a tombstone, an
undecodable record's dead letter), so a redelivered record collapses into one row.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickwheel.errors import TickwheelError
from tickwheel.events import requested_event
from tickwheel.records import (
    Alert,
    DeadLetter,
    ExecutionEvent,
    ExecutionRequest,
    JobDefinition,
    WorkflowEvent,
)

#: One row of a history table: column name → the value the ClickHouse client writes (an int,
#: text, a datetime, None, a list): a row is not a record, its columns are the table's.
Row = dict[str, Any]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: What `DateTime64(3, 'UTC')` represents (ClickHouse documents 1900-01-01 .. 2299-12-31).
MIN_STORABLE_MS = int((dt.datetime(1900, 1, 1, tzinfo=dt.UTC) - EPOCH).total_seconds() * 1000)
MAX_STORABLE_MS = int((dt.datetime(2299, 12, 31, tzinfo=dt.UTC) - EPOCH).total_seconds() * 1000)


class UnstorableRecord(TickwheelError, ValueError):
    """A decoded record that no history table can hold as it is."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Source:
    """Where the sink read a record: stored with its row as ingestion metadata."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int

    def columns(self) -> Row:
        return {
            "source_topic": self.topic,
            "source_partition": self.partition,
            "source_offset": self.offset,
        }


def instant(ms: int, field: str) -> dt.datetime:
    """Epoch milliseconds → an aware UTC datetime, refusing what ClickHouse cannot store."""
    if isinstance(ms, bool) or not isinstance(ms, int):
        raise UnstorableRecord(f"{field} is not epoch milliseconds: {ms!r}")
    if not MIN_STORABLE_MS <= ms <= MAX_STORABLE_MS:
        raise UnstorableRecord(f"{field}={ms} is outside 1900-01-01..2299-12-31")
    return EPOCH + dt.timedelta(milliseconds=ms)


def optional_instant(ms: int | None, field: str) -> dt.datetime | None:
    return None if ms is None else instant(ms, field)


def instant_ms(ms: int, field: str) -> int:
    """Epoch milliseconds checked as `instant` checks them, kept as an int: a `DateTime64(3)`
    column takes the number as it is, where a datetime costs a conversion each way (the two
    execution tables take tens of thousands of rows a second, decision 0072)."""
    if isinstance(ms, bool) or not isinstance(ms, int):
        raise UnstorableRecord(f"{field} is not epoch milliseconds: {ms!r}")
    if not MIN_STORABLE_MS <= ms <= MAX_STORABLE_MS:
        raise UnstorableRecord(f"{field}={ms} is outside 1900-01-01..2299-12-31")
    return ms


def optional_instant_ms(ms: int | None, field: str) -> int | None:
    return None if ms is None else instant_ms(ms, field)


def _json_object(text: str | None) -> dict[str, Any]:
    """`text` parsed as a JSON object; anything else (absent, invalid, not an object) is {}."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def execution_event_row(event: ExecutionEvent, source: Source) -> Row:
    """An `ExecutionEvent` → a row of `execution_events`."""
    return {
        "event_id": event["event_id"],
        "event_time": instant_ms(event["event_time"], "event_time"),
        "event_type": event["event_type"],
        "job_id": event["job_id"],
        "job_type": event["job_type"],
        "tenant_id": event["tenant_id"],
        "execution_id": event["execution_id"],
        "attempt": max(0, int(event["attempt"])),
        "scheduled_time": instant_ms(event["scheduled_time"], "scheduled_time"),
        "fire_time": optional_instant_ms(event.get("fire_time"), "fire_time"),
        "worker_id": event.get("worker_id"),
        "lease_deadline": optional_instant_ms(event.get("lease_deadline"), "lease_deadline"),
        "error_kind": event.get("error_kind"),
        "error": event.get("error"),
        "reason": event.get("reason"),
        "details": event.get("details") or "{}",
        **source.columns(),
    }


def requested_event_row(request: ExecutionRequest, source: Source) -> Row:
    """An `ExecutionRequest` → its `requested` row of `execution_events` (derived, not
    published: docs/decisions/0007)."""
    # `requested_event` builds every field of an ExecutionEvent (tickwheel.events).
    return execution_event_row(requested_event(request), source)


def request_event_id(execution_id: str, attempt: int) -> str:
    """The id of an execution request: one request per (execution, attempt)."""
    return f"request:{execution_id}:{attempt}"


def execution_request_row(request: ExecutionRequest, source: Source) -> Row:
    """An `ExecutionRequest` → a row of `execution_requests`."""
    return {
        "event_id": request_event_id(request["execution_id"], request["attempt"]),
        "event_time": instant_ms(request["requested_at"], "requested_at"),
        "execution_id": request["execution_id"],
        "job_id": request["job_id"],
        "job_version": max(0, int(request["job_version"])),
        "job_type": request["job_type"],
        "tenant_id": request["tenant_id"],
        "priority": request["priority"],
        "attempt": max(0, int(request["attempt"])),
        "trigger": request["trigger"],
        "late": bool(request.get("late", False)),
        "scheduled_time": instant_ms(request["scheduled_time"], "scheduled_time"),
        "fire_time": instant_ms(request["fire_time"], "fire_time"),
        "period_start": instant_ms(request["period_start"], "period_start"),
        "period_end": optional_instant_ms(request.get("period_end"), "period_end"),
        "max_attempts": max(0, int(request["max_attempts"])),
        "lease_seconds": max(0, int(request.get("lease_seconds", 0))),
        "heartbeat_seconds": max(0, int(request.get("heartbeat_seconds", 0))),
        "payload": request.get("payload") or "{}",
        **source.columns(),
    }


def job_definition_row(definition: JobDefinition, source: Source) -> Row:
    """A `JobDefinition` → a row of `job_definitions` (one row per version)."""
    return {
        # A version identifies one change of a job; the same version published again (a
        # producer's retry) is the same change.
        "event_id": f"definition:{definition['jobId']}:v{definition['version']}",
        "event_time": instant(definition["updatedAt"], "updatedAt"),
        "job_id": definition["jobId"],
        "version": max(0, int(definition["version"])),
        "deleted": False,
        "job_type": definition["type"],
        "tenant_id": definition.get("tenantId") or "",
        "schedule_kind": "cron" if definition.get("cron") is not None else "once",
        "cron": definition.get("cron"),
        "timezone": definition.get("timezone"),
        "run_at": optional_instant(definition.get("runAt"), "runAt"),
        "priority": definition.get("priority") or "",
        "enabled": bool(definition.get("enabled", True)),
        "definition": json.dumps(dict(definition), sort_keys=True, default=str),
        **source.columns(),
    }


def job_tombstone_row(job_id: str, source: Source) -> Row:
    """A tombstone (key, no value) on `jobs.definitions` → a `deleted` row.

    It carries no id or time of its own: its offset identifies it and the record's Kafka
    timestamp dates it, both stable across redeliveries.
    """
    return {
        "event_id": f"tombstone:{job_id}:{source.partition}/{source.offset}",
        "event_time": instant(source.timestamp_ms, "timestamp"),
        "job_id": job_id,
        "version": 0,
        "deleted": True,
        "job_type": "",
        "tenant_id": "",
        "schedule_kind": "",
        "cron": None,
        "timezone": None,
        "run_at": None,
        "priority": "",
        "enabled": False,
        "definition": "",
        **source.columns(),
    }


def dead_letter_row(letter: DeadLetter, source: Source) -> Row:
    """A `DeadLetter` → a row of `dead_letters`.

    A dead letter of an undecodable record gets its id from the record it stands for: whoever
    met that record (this sink after a redelivery, the timer, a worker) wrote a dead letter
    with a fresh random id, and they are one dead letter, not several.
    """
    reason = str(letter["reason"])
    if reason.startswith("undecodable"):
        event_id = (
            f"undecodable:{letter['source_topic']}/{letter['source_partition']}"
            f"/{letter['source_offset']}"
        )
    else:
        event_id = str(letter["dead_letter_id"])
    return {
        "event_id": event_id,
        "event_time": instant(letter["event_time"], "event_time"),
        "job_id": letter.get("job_id") or "",
        # Not in the record: the analyst queries take them from the execution's events.
        "job_type": "",
        "tenant_id": "",
        "execution_id": letter.get("execution_id") or "",
        "attempt": max(0, int(letter.get("attempt") or 0)),
        "scheduled_time": None,
        "reason": reason,
        "error_kind": None,
        "error": letter.get("error"),
        "payload": letter.get("payload") or "",
        # The bad record's own place (migration 0008); source_* below is where the sink
        # read this dead letter.
        "record_topic": str(letter.get("source_topic") or ""),
        "record_partition": _known_position(letter.get("source_partition")),
        "record_offset": _known_position(letter.get("source_offset")),
        **source.columns(),
    }


def _known_position(value: Any) -> int | None:
    """A partition or offset, or None where the writer had none (it writes -1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def workflow_event_row(event: WorkflowEvent, source: Source) -> Row:
    """A `WorkflowEvent` → a row of `workflow_events`; `data` goes to `details`.

    v2 carries `seq`, `actor`, `tenant_id`, `execution_id`, `error`, `cause_input_id` and
    `status` as fields; a v1 record (decoded with their defaults) has the first four read
    from `data` when it names them, and `seq` 0."""
    data = _json_object(event.get("data"))

    def field(name: str) -> str | None:
        return _str_or_none(event.get(name)) or _str_or_none(data.get(name))

    return {
        "event_id": event["event_id"],
        "event_time": instant(event["event_time"], "event_time"),
        "event_type": event["event_type"],
        "workflow_id": event["workflow_id"],
        "definition_id": event["definition_id"],
        "definition_version": max(0, int(event["definition_version"])),
        "seq": max(0, int(event.get("seq") or 0)),
        "tenant_id": field("tenant_id") or "",
        "step_id": event.get("step_id"),
        "attempt": max(0, int(event.get("attempt") or 0)),
        "execution_id": field("execution_id"),
        "actor": field("actor"),
        "error": field("error"),
        "cause_input_id": _str_or_none(event.get("cause_input_id")),
        "status": _str_or_none(event.get("status")),
        "details": event.get("data") or "{}",
        **source.columns(),
    }


def alert_row(alert: Alert, source: Source) -> Row:
    """An `Alert` → a row of `alerts`; `state` and `workflow_id` come from `details` if set."""
    details = _json_object(alert.get("details"))
    state = details.get("state")
    return {
        "event_id": alert["alert_id"],
        "event_time": instant(alert["event_time"], "event_time"),
        "alert_type": alert["kind"],
        "state": state if state in ("firing", "resolved") else "firing",
        "severity": alert["severity"],
        "tenant_id": alert.get("tenant_id") or "",
        "job_id": alert.get("job_id"),
        "workflow_id": _str_or_none(details.get("workflow_id")),
        "message": alert["message"],
        "details": alert.get("details") or "{}",
        **_alert_lifecycle(alert, details),
        **source.columns(),
    }


def _alert_lifecycle(alert: Alert, details: Mapping[str, Any]) -> Row:
    """Alert v2's lifecycle fields (migration 0010); a v1 record's are read from `details`."""

    def field(name: str) -> Any:
        value = alert.get(name)
        return details.get(name) if value is None else value

    def text(name: str) -> str:
        return _str_or_none(field(name)) or ""

    def when(name: str) -> dt.datetime | None:
        value = field(name)
        return optional_instant(value, name) if isinstance(value, int) else None

    return {
        "incident_id": text("incident_id"),
        "fingerprint": text("fingerprint"),
        "transition": text("transition"),
        "subject": text("subject"),
        "opened_at": when("opened_at"),
        "resolved_at": when("resolved_at"),
        "acknowledged_by": _str_or_none(alert.get("acknowledged_by")),
        "suppressed_by": _str_or_none(field("suppressed_by")),
    }
