"""The timeline of one execution: every attempt, from the slot to the outcome.

`execution_timeline(reader, execution_id)` reads the execution's events, requests and dead
letters (documented queries under `internal/`) and folds them with `build_timeline`, which is
pure. The result is a JSON-able dict (instants as ISO 8601 strings in UTC): what
`tickwheel executions get ID --json` prints and `GET /executions/{id}` returns.

Fencing: an outcome whose attempt has a `fenced` event is shown with `accepted: false`; it
never decides the execution's outcome (DESIGN §1).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tickwheel.errors import TickwheelError
from tickwheel.history._queries import run_query
from tickwheel.history._reader import HistoryReader

OUTCOMES = ("succeeded", "failed", "cancelled")
TERMINAL_OUTCOMES = ("succeeded", "cancelled")
#: Life-cycle order, to sort events that share an instant.
EVENT_ORDER = (
    "skipped",
    "requested",
    "leased",
    "heartbeat",
    "failed",
    "succeeded",
    "cancelled",
    "fenced",
    "retry_scheduled",
    "dead_lettered",
)
_RANK = {name: index for index, name in enumerate(EVENT_ORDER)}


class ExecutionNotFound(TickwheelError, LookupError):
    """The history holds nothing about this execution id."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(
            f"no execution {execution_id!r} in the history (unknown id, not yet recorded by "
            "the history sink, or older than the retention)"
        )
        self.execution_id = execution_id


def execution_timeline(reader: HistoryReader, execution_id: str) -> dict[str, Any]:
    """The timeline of `execution_id`, read from a history store or an owner client.

    Raises `ExecutionNotFound` if the history holds no event, request or dead letter for it.
    """
    params = {"execution_id": execution_id}
    events = run_query(reader, "timeline_events", params).as_dicts()
    requests = run_query(reader, "timeline_requests", params).as_dicts()
    letters = run_query(reader, "timeline_dead_letters", params).as_dicts()
    if not events and not requests and not letters:
        raise ExecutionNotFound(execution_id)
    return build_timeline(execution_id, events, requests, letters)


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    return str(value)


def _details(text: Any) -> Any:
    if not text or text == "{}":
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def sort_events(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Events in the order they happened; ties at one instant in life-cycle order."""
    return sorted(
        events,
        key=lambda e: (e["event_time"], _RANK.get(e["event_type"], 99), e["event_id"]),
    )


def _event_view(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "event_id": event["event_id"],
        "event_type": event["event_type"],
        "event_time": _iso(event["event_time"]),
        "attempt": event["attempt"],
        "worker_id": event.get("worker_id"),
        "lease_deadline": _iso(event.get("lease_deadline")),
        "error_kind": event.get("error_kind"),
        "error": event.get("error"),
        "reason": event.get("reason"),
        "details": _details(event.get("details")),
    }


def _attempt_view(
    number: int, events: list[Mapping[str, Any]], request: Mapping[str, Any] | None
) -> dict[str, Any]:
    requested = next((e for e in events if e["event_type"] == "requested"), None)
    leases = [e for e in events if e["event_type"] == "leased"]
    heartbeats = [e for e in events if e["event_type"] == "heartbeat"]
    outcomes = [e for e in events if e["event_type"] in OUTCOMES]
    fenced = next((e for e in events if e["event_type"] == "fenced"), None)
    retry = next((e for e in events if e["event_type"] == "retry_scheduled"), None)
    outcome = outcomes[-1] if outcomes else None
    workers: list[str] = []
    for event in events:
        worker = event.get("worker_id")
        if worker and worker not in workers:
            workers.append(worker)
    deadlines: list[str] = []
    for event in leases + heartbeats:
        deadline = _iso(event.get("lease_deadline"))
        if deadline is not None and deadline not in deadlines:
            deadlines.append(deadline)
    deadlines.sort()
    trigger: str | None = None
    late: bool | None = None
    if request is not None:
        trigger, late = str(request["trigger"]), bool(request["late"])
    elif requested is not None and requested.get("reason"):
        # The timer writes the trigger into the requested event's reason (`trigger[:late]`).
        trigger, _, flag = str(requested["reason"]).partition(":")
        late = flag == "late"
    fire_time = (request or {}).get("fire_time") or (requested or {}).get("fire_time")
    requested_at = (request or {}).get("requested_at") or (requested or {}).get("event_time")
    return {
        "attempt": number,
        "trigger": trigger,
        "late": late,
        "requested_at": _iso(requested_at),
        "fire_time": _iso(fire_time),
        "worker_id": leases[-1].get("worker_id") if leases else (workers[-1] if workers else None),
        "workers": workers,
        "leased_at": _iso(leases[0]["event_time"]) if leases else None,
        "lease_deadlines": deadlines,
        "lease_deadline": deadlines[-1] if deadlines else None,
        "heartbeats": [_iso(e["event_time"]) for e in heartbeats],
        "outcome": outcome["event_type"] if outcome else None,
        "outcome_at": _iso(outcome["event_time"]) if outcome else None,
        "outcome_worker_id": outcome.get("worker_id") if outcome else None,
        "error_kind": outcome.get("error_kind") if outcome else None,
        "error": outcome.get("error") if outcome else None,
        "reason": outcome.get("reason") if outcome else None,
        # An outcome of a fenced attempt was reported, recorded, and not accepted.
        "accepted": None if outcome is None else fenced is None,
        "fenced": (
            None
            if fenced is None
            else {"at": _iso(fenced["event_time"]), "reason": fenced.get("reason")}
        ),
        "retry_scheduled": (
            None
            if retry is None
            else {
                "at": _iso(retry["event_time"]),
                "reason": retry.get("reason"),
                "details": _details(retry.get("details")),
            }
        ),
    }


def _diff_ms(later: dt.datetime | None, earlier: dt.datetime | None) -> int | None:
    if later is None or earlier is None:
        return None
    return (later - earlier) // dt.timedelta(milliseconds=1)


def _dead_letter_view(
    event: Mapping[str, Any] | None, letter: Mapping[str, Any] | None
) -> tuple[dt.datetime, dict[str, Any]] | None:
    """When the execution was dead-lettered and why: from the timer's `dead_lettered` event,
    completed by the dead-letter record (either may be recorded without the other)."""
    if event is None and letter is None:
        return None
    if event is not None:
        at: dt.datetime = event["event_time"]
    else:
        assert letter is not None
        at = letter["dead_lettered_at"]
    first, second = event or {}, letter or {}
    return at, {
        "at": _iso(at),
        "reason": first.get("reason") or second.get("reason"),
        "attempt": first.get("attempt") or second.get("attempt"),
        "error": first.get("error") or second.get("error"),
    }


def _status(attempts: list[dict[str, Any]], outcome: str | None, skipped: bool) -> str:
    if outcome is not None:
        return outcome
    if not attempts:
        return "skipped" if skipped else "unknown"
    last = attempts[-1]
    if last["outcome"] == "failed" and last["accepted"]:
        return "retrying" if last["retry_scheduled"] else "failed"
    if last["leased_at"] is not None and last["outcome"] is None:
        return "running"
    return "pending"


def build_timeline(
    execution_id: str,
    events: Sequence[Mapping[str, Any]],
    requests: Sequence[Mapping[str, Any]] = (),
    dead_letters: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Fold one execution's rows (as `QueryResult.as_dicts()` gives them) into its timeline."""
    ordered = sort_events(events)
    by_attempt: dict[int, list[Mapping[str, Any]]] = {}
    for event in ordered:
        if event["event_type"] in ("skipped", "dead_lettered"):
            continue  # about the execution, not one attempt
        by_attempt.setdefault(int(event["attempt"]), []).append(event)
    request_of = {int(r["attempt"]): r for r in requests}
    numbers = sorted((set(by_attempt) | set(request_of)) - {0})
    attempts = [_attempt_view(n, by_attempt.get(n, []), request_of.get(n)) for n in numbers]

    first = ordered[0] if ordered else None
    first_request = request_of.get(min(request_of)) if request_of else None
    skipped = next((e for e in ordered if e["event_type"] == "skipped"), None)
    dead_event = next((e for e in ordered if e["event_type"] == "dead_lettered"), None)
    letter = dead_letters[0] if dead_letters else None

    dead = _dead_letter_view(dead_event, letter)
    outcome: str | None = None
    finished_at: dt.datetime | None = None
    accepted = [
        e
        for n in numbers
        for e in by_attempt.get(n, [])
        if e["event_type"] in TERMINAL_OUTCOMES
        and not any(f["event_type"] == "fenced" for f in by_attempt.get(n, []))
    ]
    if dead is not None:
        outcome, finished_at = "dead_lettered", dead[0]
    elif accepted:
        outcome, finished_at = str(accepted[0]["event_type"]), accepted[0]["event_time"]

    source: Mapping[str, Any] = first or first_request or {}
    scheduled = source.get("scheduled_time")
    fire_time = (first_request or {}).get("fire_time") or next(
        (e.get("fire_time") for e in ordered if e.get("fire_time") is not None), None
    )
    requested_at = next(
        (e["event_time"] for e in ordered if e["event_type"] == "requested"),
        (first_request or {}).get("requested_at"),
    )
    return {
        "execution_id": execution_id,
        "job_id": source.get("job_id"),
        "job_type": source.get("job_type"),
        "tenant_id": source.get("tenant_id"),
        "job_version": first_request["job_version"] if first_request else None,
        "priority": first_request["priority"] if first_request else None,
        "max_attempts": first_request["max_attempts"] if first_request else None,
        "status": _status(attempts, outcome, skipped is not None),
        "outcome": outcome,
        "scheduled_time": _iso(scheduled),
        "fire_time": _iso(fire_time),
        "jitter_ms": _diff_ms(fire_time, scheduled),
        "requested_at": _iso(requested_at),
        "lateness_ms": _diff_ms(requested_at, fire_time) if attempts else None,
        "finished_at": _iso(finished_at),
        "attempt_count": len(attempts),
        "attempts": attempts,
        "skipped": (
            None
            if skipped is None
            else {
                "at": _iso(skipped["event_time"]),
                "reason": skipped.get("reason"),
                "details": _details(skipped.get("details")),
            }
        ),
        "dead_letter": None if dead is None else dead[1],
        "events": [_event_view(e) for e in ordered],
    }
