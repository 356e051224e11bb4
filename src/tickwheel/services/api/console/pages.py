"""The console's pages (GET): overview, jobs, job, execution, alerts (dead letters: `dead_letters.py`).

Each handler reads through `reads`, shapes with `models`, draws with `svg`, renders with
`render`. A failure is an error page naming what went wrong (the API's problem), never a
traceback; a page whose history is unavailable still shows what the topics say.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from tickwheel.adapters.kafka.placement import step_workflow
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.calendars import uses_calendar
from tickwheel.services.api.console import models, reads, svg
from tickwheel.services.api.console.access import console_backend, is_operator
from tickwheel.services.api.console.render import error_page, page
from tickwheel.services.api.console.summary import overview_model

log = logging.getLogger("tickwheel.api.console")
router = APIRouter(include_in_schema=False)
DAY_MS = 86_400_000
MAX_GRID_DAYS = 30


def backend(request: Request) -> Backend:
    value: Backend = console_backend(request)
    return value


BackendDep = Annotated[Backend, Depends(backend)]


def _failed(request: Request, exc: Exception, section: str) -> HTMLResponse:
    response = error_page(request, exc, section)
    if response.status_code >= 500:  # a bug or an outage: the log keeps the traceback
        log.warning(
            "console page failed",
            exc_info=exc,
            extra={"action": "console_page_failed", "path": request.url.path},
        )
    return response


def _alert_kinds_by_job(found: list[dict[str, Any]]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for incident in found:
        if incident.get("state") == "open" and incident.get("job_id"):
            kinds.setdefault(incident["job_id"], set()).add(incident["kind"])
    return kinds


def job_rows(
    b: Backend, history: reads.History, found: list[dict[str, Any]]
) -> list[models.JobRow]:
    now = b.now_ms()
    outcomes = reads.job_outcomes(history)
    kinds = _alert_kinds_by_job(found)
    memo: models.ScheduleMemo = {}
    records = b.jobs.list()
    # Read once a page, and only when a job names a calendar (most pages need none).
    calendars = b.known_calendars() if any(uses_calendar(r) for r in records) else None
    rows = [
        models.job_row(
            r,
            outcomes.get(r["jobId"], models.JobOutcome()),
            now,
            kinds.get(r["jobId"], ()),
            memo,
            calendars,
        )
        for r in records
    ]
    return rows


@router.get("", response_class=HTMLResponse)
def overview(request: Request, b: BackendDep) -> Response:
    try:
        with reads.history(b) as h:
            found, alerts_problem = reads.incidents(b, request.app.state.console_alerts)
            rows = job_rows(b, h, found)
            letters = request.app.state.console_dead_letters(request, b)
            context = overview_model(b.now_ms(), rows, found, h, letters, is_operator(b))
            problems = [p for p in (h.problem, alerts_problem) if p]
        return page(
            request, "overview.html", {"section": "overview", **context, "problems": problems}
        )
    except Exception as exc:
        return _failed(request, exc, "overview")


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    b: BackendDep,
    q: Annotated[str, Query(max_length=200)] = "",
    status: Annotated[str, Query(max_length=20)] = "",
    tenant: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    try:
        return render_jobs(request, b, q, status, tenant=tenant)
    except Exception as exc:
        return _failed(request, exc, "jobs")


def render_jobs(
    request: Request,
    b: Backend,
    q: str = "",
    status: str = "",
    error: str | None = None,
    code: int = 200,
    tenant: str = "",
) -> Response:
    """The jobs page: problems first, filtered by `q` and the chip `status`."""
    with reads.history(b) as h:
        found, alerts_problem = reads.incidents(b, request.app.state.console_alerts)
        rows = job_rows(b, h, found)
        problems = [p for p in (h.problem, alerts_problem) if p]
    shown = models.filter_rows(rows, q, status if status in models.STATUSES else "", tenant)
    tenants = sorted({r.tenant_id for r in rows})
    counts = {name: sum(1 for r in rows if r.status == name) for name in models.STATUSES}
    context = {
        "section": "jobs",
        "rows": shown,
        "total": len(rows),
        "q": q,
        "status": status,
        "counts": counts,
        "statuses": models.STATUSES,
        "problems": problems,
        "error": error,
        "tenant": tenant,
        "tenants": tenants,
    }
    return page(request, "jobs.html", context, status=code)


def job_context(request: Request, b: Backend, job_id: str, days: int) -> dict[str, Any]:
    """Everything the job page shows (also what an action re-renders it with)."""
    record = b.jobs.get(job_id)
    now = b.now_ms()
    days = min(max(days, 1), MAX_GRID_DAYS)
    with reads.history(b) as h:
        outcomes = reads.job_outcomes(h, job_id)
        found, alerts_problem = reads.incidents(b, request.app.state.console_alerts)
        kinds = _alert_kinds_by_job(found).get(job_id, set())
        calendars = b.known_calendars() if uses_calendar(record) else None
        row = models.job_row(
            record, outcomes.get(job_id, models.JobOutcome()), now, kinds, calendars=calendars
        )
        versions = models.version_diffs(reads.job_versions(h, job_id))
        grid = grid_counts = None
        recurring = record.get("runAt") is None
        if recurring:
            audit = reads.audit(h, job_id, now - days * DAY_MS, now)
            if audit is not None:
                slots = models.grid_slots(audit)
                grid = svg.occurrence_grid(slots, row.timezone)
                grid_counts = models.status_counts(slots)
                problem_slots = [s for s in slots if s.status in svg.PROBLEM_STATUSES]
            else:
                problem_slots = []
        else:
            problem_slots = []
        executions = reads.job_executions(h, job_id)
        problems = [p for p in (h.problem, alerts_problem) if p]
    return {
        "section": "jobs",
        "job": record,
        "row": row,
        "days": days,
        "definition": models.definition_view(record),
        "next_runs": models.next_occurrences(record, now, calendars=calendars),
        "versions": versions,
        "grid": grid,
        "grid_counts": grid_counts,
        "problem_slots": problem_slots[:200],
        "executions": executions,
        "problems": problems,
        "recurring": recurring,
        "slot_statuses": svg.SLOT_STATUSES,
    }


@router.get("/jobs/new", response_class=HTMLResponse)
def new_job_page(request: Request) -> Response:
    return page(request, "new_job.html", {"section": "jobs", "spec": None})


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request,
    b: BackendDep,
    job_id: str,
    days: Annotated[int, Query(ge=1, le=MAX_GRID_DAYS)] = 1,
) -> Response:
    try:
        return page(request, "job.html", job_context(request, b, job_id, days))
    except Exception as exc:
        return _failed(request, exc, "jobs")


def owner_check(request: Request, b: Backend, timeline: dict[str, Any]) -> None:
    """A scoped key reads an execution of its own jobs (or workflows) only: another tenant's
    is as unknown as a job that does not exist (a 404)."""
    workflow = step_workflow(timeline.get("job_id"))
    if workflow is not None:
        from tickwheel.services.api.console.access import workflows_for

        workflows_for(request, request.app.state.console_workflows(b)).get(workflow)
    else:
        b.jobs.get(str(timeline.get("job_id")))


@router.get("/executions/{execution_id}", response_class=HTMLResponse)
def execution_page(request: Request, b: BackendDep, execution_id: str) -> Response:
    try:
        with reads.history(b) as h:
            if h.reader is None:
                raise RuntimeError(h.problem)
            timeline = reads.timeline(h, execution_id)
        assert timeline is not None
        if b.tenant_id is not None:
            owner_check(request, b, timeline)
        context = {
            "section": "jobs",
            "t": timeline,
            "picture": svg.execution_timeline(timeline),
            "retryable": timeline["status"] in models.RETRYABLE_STATUSES,
            "step_of": step_workflow(timeline.get("job_id")),
            "retried": request.query_params.get("retried"),
        }
        return page(request, "execution.html", context)
    except Exception as exc:
        return _failed(request, exc, "jobs")


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(
    request: Request, b: BackendDep, state: Annotated[str, Query(max_length=20)] = ""
) -> Response:
    try:
        found, problem = reads.incidents(b, request.app.state.console_alerts)
        shown = [i for i in found if not state or i.get("state") == state]
        shown.sort(key=lambda i: (i.get("state") != "open", -(i.get("opened_at") or 0)))
        context = {
            "section": "alerts",
            "incidents": shown,
            "state": state,
            "problems": [problem] if problem else [],
        }
        return page(request, "alerts.html", context)
    except Exception as exc:
        return _failed(request, exc, "alerts")
