"""`GET /jobs/{id}/occurrences?from&to`: a job's slots in one list, past and future.

Past slots (before now) come from the schedule audit over the history (`fired`, `skipped`,
`missing`, `paused`: decision 0039's statuses); future ones from the job's current schedule
(`scheduled`, or `paused` while the job is disabled), compiled with the job's holiday calendar
as the timer compiles it, each with the preview's `note` where a calendar moved it or the DST
policy shifted it. The history is eventually consistent: a slot that fired a moment ago may
read `missing` until the history sink has written it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from tickwheel.core.definition import parse_instant_ms
from tickwheel.core.preview import slot_note
from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput
from tickwheel.services.api.calendars import compile_job
from tickwheel.services.api.problems import invalid_input, problem_responses
from tickwheel.services.api.routes_jobs import BackendDep, JobId

router = APIRouter(tags=["jobs"])

MAX_OCCURRENCES = 1000
EXAMPLE = {
    "jobId": "nightly-reconcile",
    "from": "2026-11-29T00:00:00Z",
    "to": "2026-12-03T00:00:00Z",
    "truncated": False,
    "history": "recorded",
    "items": [
        {
            "scheduledTime": "2026-11-29T02:00:00Z",
            "status": "fired",
            "executionId": "3f0c…",
            "outcome": "succeeded",
            "latenessMs": 412,
        },
        {"scheduledTime": "2026-11-30T02:00:00Z", "status": "missing"},
        {"scheduledTime": "2026-12-02T02:00:00Z", "status": "scheduled"},
    ],
}


def _past(b: Any, job_id: str, start_ms: int, end_ms: int) -> tuple[list[dict[str, Any]], str]:
    from tickwheel.history import schedule_audit

    reader = b.open_history()
    try:
        audit = schedule_audit(reader, job_id, start_ms, end_ms)
    except InvalidInput as exc:
        if exc.field == "job":  # the history has not recorded the definition yet
            return [], "none-yet"
        raise invalid_input(exc, where="query") from None
    finally:
        reader.close()
    items = []
    for row in audit["occurrences"]:
        item: dict[str, Any] = {
            "scheduledTime": format_utc(parse_instant_ms(row["scheduled_time"], "from")),
            "status": row["status"],
        }
        for name, key in (
            ("executionId", "execution_id"),
            ("outcome", "outcome"),
            ("skipReason", "skip_reason"),
            ("latenessMs", "lateness_ms"),
        ):
            if row.get(key) is not None:
                item[name] = row[key]
        items.append(item)
    return items, "recorded"


@router.get(
    "/jobs/{job_id}/occurrences",
    summary="A job's slots in [from, to): past ones with their outcome, future ones scheduled",
    responses={
        200: {
            "description": "The slots, oldest first (at most `limit`)",
            "content": {
                "application/json": {
                    "schema": {"type": "object", "additionalProperties": True},
                    "example": EXAMPLE,
                }
            },
        },
        **problem_responses(404, 422, 503),
    },
)
def job_occurrences(
    b: BackendDep,
    job_id: JobId,
    from_: Annotated[str, Query(alias="from", max_length=64, examples=["2026-11-29T00:00:00Z"])],
    to: Annotated[str, Query(max_length=64, examples=["2026-12-03T00:00:00Z"])],
    limit: Annotated[int, Query(ge=1, le=MAX_OCCURRENCES)] = 500,
) -> dict[str, Any]:
    try:
        from_ms = parse_instant_ms(from_, "from")
        to_ms = parse_instant_ms(to, "to")
        if to_ms <= from_ms:
            raise InvalidInput("to", "must be after `from`")
    except InvalidInput as exc:
        raise invalid_input(exc, where="query") from None
    record = b.jobs.get(job_id)
    now = b.now_ms()
    items: list[dict[str, Any]] = []
    history = "not-asked"
    if from_ms < now:
        items, history = _past(b, job_id, from_ms, min(to_ms, now))
    if to_ms > now and len(items) <= limit:
        status = "scheduled" if record.get("enabled", True) else "paused"
        compiled = compile_job(b.known_calendars, record)
        zone = record.get("timezone") or "UTC"
        # (now, to) from the grid: `first` is (start, end], so stop a millisecond early.
        for slot in compiled.first(max(from_ms - 1, now), to_ms - 1, limit + 1 - len(items)):
            item = {"scheduledTime": format_utc(slot), "status": status}
            note = slot_note(compiled, zone, slot)
            if note is not None:
                item["note"] = note
            items.append(item)
    return {
        "jobId": job_id,
        "from": format_utc(from_ms),
        "to": format_utc(to_ms),
        "truncated": len(items) > limit,
        "history": history,
        "items": items[:limit],
    }
