"""Alerts and the disabled-jobs report from the console.

Acknowledging an alert sends the `acknowledge` record on `watchdog.commands` that `tickwheel
alerts ack` sends: the watchdog applies it at its next evaluation, and the incident gets an
`acknowledged` transition naming who and the note. The report is what `tickwheel jobs
disabled` folds from `jobs.definitions`, as a page and as CSV.
"""

from __future__ import annotations

import csv
import io
import logging
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend, owned
from tickwheel.services.api.console.models import require_reason
from tickwheel.services.api.console.render import (
    error_page,
    headers,
    one,
    page,
    read_form,
    see_other,
)

log = logging.getLogger("tickwheel.api.console")
router = APIRouter(include_in_schema=False)
AckSender = Callable[[Backend, str, dict[str, Any]], None]


def send_ack(backend: Backend, incident_id: str, command: dict[str, Any]) -> None:
    """Publish the acknowledgement to `watchdog.commands`, keyed by the incident."""
    from tickwheel.sdk.alerts import publish_ack

    publish_ack(backend.bootstrap, command)


def acknowledge(request: Request, b: Backend, wanted: str, by: str, note: str) -> str:
    from tickwheel.sdk.alerts import UnknownAlert, ack_command, find_incident

    incident: dict[str, Any] = find_incident(owned(b, request.app.state.console_alerts(b)), wanted)
    if incident["state"] != "open":
        raise UnknownAlert(
            f"incident {incident['incident_id']} is resolved; accepted: an open incident"
        )
    command = ack_command(incident["incident_id"], by, note, b.now_ms(), str(uuid.uuid4()))
    request.app.state.console_ack(b, incident["incident_id"], command)
    log.info(
        "alert acknowledged",
        extra={
            "action": "console_alert_acknowledged",
            "incident_id": incident["incident_id"],
            "by": by,
        },
    )
    found: str = incident["incident_id"]
    return found


@router.post("/alerts/{incident_id}/ack")
async def ack_alert(request: Request, incident_id: str) -> Response:
    b: Backend = console_backend(request)
    form = await read_form(request)
    try:
        note = require_reason(one(form, "note"))
        by = one(form, "by").strip() or "operator"
        if len(by) > 100:
            raise InvalidInput("by", f"{len(by)} characters; accepted: 1-100")
        done = await run_in_threadpool(acknowledge, request, b, incident_id, by, note)
    except Exception as exc:
        return error_page(request, exc, "alerts")
    return see_other(
        "/alerts",
        f"acknowledgement of {done} sent by {by}; the watchdog applies it at its next evaluation",
    )


# -- the disabled-jobs report -------------------------------------------------------------

DisabledSource = Callable[[Backend], list[dict[str, Any]]]
CSV_COLUMNS = ("job_id", "tenant_id", "owner", "reason", "by", "since", "review_by", "version")


def topic_disabled(backend: Backend) -> list[dict[str, Any]]:
    """Every disabled job, folded from `jobs.definitions` as `tickwheel jobs disabled` does."""
    from tickwheel.sdk.alerts import disabled_jobs

    found: list[dict[str, Any]] = disabled_jobs(backend.bootstrap)
    return found


def _report(request: Request) -> list[dict[str, Any]]:
    b: Backend = console_backend(request)
    rows: list[dict[str, Any]] = owned(b, request.app.state.console_disabled(b))
    now = b.now_ms()
    for row in rows:
        row["overdue_review"] = row.get("review_by") is not None and row["review_by"] < now
    return sorted(rows, key=lambda r: (not r["overdue_review"], r.get("since") or 0))


@router.get("/disabled", response_class=HTMLResponse)
def disabled_page(request: Request) -> Response:
    try:
        context = {"section": "jobs", "rows": _report(request)}
        return page(request, "disabled.html", context)
    except Exception as exc:
        return error_page(request, exc, "jobs")


@router.get("/disabled.csv")
def disabled_csv(request: Request) -> Response:
    """The report as CSV (instants in UTC ISO 8601), for a spreadsheet or a review."""
    try:
        rows = _report(request)
    except Exception as exc:
        return error_page(request, exc, "jobs")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(
            [
                format_utc(row[c])
                if c in ("since", "review_by") and row.get(c) is not None
                else ("" if row.get(c) is None else row[c])
                for c in CSV_COLUMNS
            ]
        )
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={**headers(), "Content-Disposition": 'attachment; filename="disabled-jobs.csv"'},
    )
