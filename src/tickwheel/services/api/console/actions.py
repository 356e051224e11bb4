"""The console's actions (POST, plain HTML forms): create, trigger, backfill (with a dry-run
count), pause with a required reason, resume, edit at an expected version (a conflict shows
the version-conflict dialog), bulk pause/resume with a required reason, cancel an execution.

Writes go through the API's own helpers (`routes_jobs.update_record`, the pause-reason
label), so the console and `/v1/jobs` change a job the same way. After an action the browser
is sent back to the page it acted on (post/redirect/get); a refused action re-renders the
page with the reason, status 4xx, and the form as it was.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from tickwheel.core.definition import MAX_BACKFILL, parse_instant_ms
from tickwheel.errors import InvalidInput
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.calendars import compile_job
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.models import PAUSE_REASON_LABEL, require_reason
from tickwheel.services.api.console.pages import job_context, render_jobs
from tickwheel.services.api.console.render import error_page, one, page, read_form, see_other
from tickwheel.services.api.problems import Problem, from_exception
from tickwheel.services.api.routes_jobs import create_record, update_record

log = logging.getLogger("tickwheel.api.console")
router = APIRouter(include_in_schema=False)
#: The definition fields the console's edit form changes.
EDITABLE = ("cron", "timezone", "type", "expectedMaxInterval", "maxAttempts")


def _backend(request: Request) -> Backend:
    value: Backend = console_backend(request)
    return value


#: A disable's account on the definition (read by `tickwheel jobs disabled` and the watchdog).
ACCOUNT = ("disabledReason", "disabledBy", "disabledOwner", "disabledReviewBy")


def who(form: dict[str, list[str]]) -> str:
    """The operator a form names (`by`), as the account records it: `console:<name>`."""
    name = one(form, "by").strip() or "operator"
    if len(name) > 100:
        raise InvalidInput("by", f"{len(name)} characters; accepted: 1-100")
    return f"console:{name}"


def pause(b: Backend, job_id: str, reason: str, by: str = "console:operator") -> dict[str, Any]:
    """Disable the job with its account: the reason in the API's label (as `POST
    /v1/jobs/{id}/pause` keeps it) and in `disabledReason`, and who in `disabledBy`."""
    labels = dict(b.jobs.get(job_id).get("labels") or {})
    changes = {
        "enabled": False,
        "labels": {**labels, PAUSE_REASON_LABEL: reason},
        "disabledReason": reason,
        "disabledBy": by,
    }
    record = update_record(b, job_id, changes, None)
    log.info(
        "job paused",
        extra={
            "action": "job_paused",
            "job_id": job_id,
            "reason": reason,
            "by": by,
            "via": "console",
        },
    )
    return record


def resume(b: Backend, job_id: str, reason: str | None = None, by: str = "") -> dict[str, Any]:
    """Enable the job again; its disable's account and the reason label go."""
    current = b.jobs.get(job_id)
    labels = dict(current.get("labels") or {})
    changes: dict[str, Any] = {"enabled": True}
    if labels.pop(PAUSE_REASON_LABEL, None) is not None:
        changes["labels"] = labels
    changes.update({name: None for name in ACCOUNT if current.get(name) is not None})
    record = update_record(b, job_id, changes, None)
    log.info(
        "job resumed",
        extra={
            "action": "job_resumed",
            "job_id": job_id,
            "reason": reason,
            "by": by,
            "via": "console",
        },
    )
    return record


def _job_refused(
    request: Request, b: Backend, job_id: str, exc: Exception, **extra: Any
) -> Response:
    """The job page again, with why the action was refused (and the dialog, for a conflict)."""
    problem = from_exception(exc)
    if problem.status >= 500 or problem.status == 404:
        return error_page(request, exc, "jobs")
    context = job_context(request, b, job_id, 1)
    context.update(error=problem.detail, **extra)
    return page(request, "job.html", context, status=problem.status)


@router.post("/jobs")
async def create_job(request: Request) -> Response:
    b = _backend(request)
    form = await read_form(request)
    spec: dict[str, Any] = {"jobId": one(form, "jobId").strip(), "type": one(form, "type", "noop")}
    for name in ("cron", "timezone", "expectedMaxInterval"):
        if one(form, name).strip():
            spec[name] = one(form, name).strip()
    try:
        record = await run_in_threadpool(create_record, b, spec)
    except Exception as exc:
        problem = from_exception(exc)
        if problem.status >= 500:
            return error_page(request, exc, "jobs")
        context = {"section": "jobs", "error": problem.detail, "spec": spec}
        return page(request, "new_job.html", context, status=problem.status)
    return see_other(f"/jobs/{record['jobId']}", f"created {record['jobId']} (v1)")


@router.post("/jobs/bulk")
async def bulk(request: Request) -> Response:
    """Pause or resume every selected job, with one required reason."""
    b = _backend(request)
    form = await read_form(request)
    action = one(form, "action")
    selected = [j for j in form.get("job", []) if j]
    try:
        if action not in ("pause", "resume"):
            raise InvalidInput("action", f"{action!r}; accepted: pause, resume")
        if not selected:
            raise InvalidInput("job", "none selected; accepted: one or more jobs ticked")
        reason = require_reason(one(form, "reason"))
        act = pause if action == "pause" else resume
        by = who(form)
        done = [await run_in_threadpool(act, b, job_id, reason, by) for job_id in selected]
    except Exception as exc:
        problem = from_exception(exc)
        if problem.status >= 500:
            return error_page(request, exc, "jobs")
        return await run_in_threadpool(
            render_jobs, request, b, error=problem.detail, code=problem.status
        )
    words = ", ".join(f"{r['jobId']} v{r['version']}" for r in done)
    return see_other("/jobs", f"{action}d {len(done)}: {words}")


@router.post("/jobs/{job_id}/pause")
async def pause_job(request: Request, job_id: str) -> Response:
    b = _backend(request)
    form = await read_form(request)
    try:
        reason = require_reason(one(form, "reason"))
        record = await run_in_threadpool(pause, b, job_id, reason, who(form))
    except Exception as exc:
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    return see_other(f"/jobs/{job_id}", f"paused (v{record['version']}): {reason}")


@router.post("/jobs/{job_id}/resume")
async def resume_job(request: Request, job_id: str) -> Response:
    b = _backend(request)
    await read_form(request)
    try:
        record = await run_in_threadpool(resume, b, job_id)
    except Exception as exc:
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    return see_other(f"/jobs/{job_id}", f"resumed (v{record['version']})")


@router.post("/jobs/{job_id}/trigger")
async def trigger_job(request: Request, job_id: str) -> Response:
    b = _backend(request)
    await read_form(request)
    try:
        command = await run_in_threadpool(b.jobs.trigger, job_id)
    except Exception as exc:
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    return see_other(f"/jobs/{job_id}", f"triggered (command {command['command_id']})")


def _backfill(b: Backend, job_id: str, start: str, end: str, dry_run: bool) -> str:
    from_ms = parse_instant_ms(start, "from")
    to_ms = parse_instant_ms(end, "to")
    if to_ms <= from_ms:
        raise InvalidInput("to", "must be after `from`")
    # With its calendar, as the timer fires it.
    compiled = compile_job(b.known_calendars, b.jobs.get(job_id))
    slots = len(compiled.first(from_ms, to_ms, MAX_BACKFILL + 1))
    if slots > MAX_BACKFILL:
        raise InvalidInput(
            "from",
            f"the range holds more than {MAX_BACKFILL} slots; accepted: "
            "at most that many (split the range)",
        )
    if dry_run:
        return f"dry run: the backfill would emit {slots} slots from {start} to {end}"
    command = b.jobs.backfill(job_id, from_ms, to_ms)
    return f"backfill of {slots} slots asked (command {command['command_id']})"


@router.post("/jobs/{job_id}/backfill")
async def backfill_job(request: Request, job_id: str) -> Response:
    b = _backend(request)
    form = await read_form(request)
    dry_run = one(form, "dryRun") in ("1", "true", "on")
    try:
        said = await run_in_threadpool(
            _backfill, b, job_id, one(form, "from"), one(form, "to"), dry_run
        )
    except Exception as exc:
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    return see_other(f"/jobs/{job_id}", said)


@router.post("/jobs/{job_id}/edit")
async def edit_job(request: Request, job_id: str) -> Response:
    """Change the schedule fields at the version the form was read at; a job that moved on
    meanwhile answers 409 with the version-conflict dialog (the change is not applied)."""
    b = _backend(request)
    form = await read_form(request)
    changes: dict[str, Any] = {}
    for name in EDITABLE:
        value = one(form, name).strip()
        if value:
            changes[name] = int(value) if name == "maxAttempts" and value.isdigit() else value
    expected_text = one(form, "expectedVersion")
    try:
        if not expected_text.isdigit():
            raise InvalidInput("expectedVersion", "required; accepted: the version the form shows")
        record = await run_in_threadpool(update_record, b, job_id, changes, int(expected_text))
    except Problem as exc:
        if exc.status == 409:
            conflict = {
                "expected": int(expected_text),
                "current": exc.extensions.get("currentVersion"),
                "submitted": changes,
            }
            return await run_in_threadpool(_job_refused, request, b, job_id, exc, conflict=conflict)
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    except Exception as exc:
        return await run_in_threadpool(_job_refused, request, b, job_id, exc)
    return see_other(f"/jobs/{job_id}", f"saved as v{record['version']}")


@router.post("/executions/{execution_id}/cancel")
async def cancel_execution(request: Request, execution_id: str) -> Response:
    b = _backend(request)
    form = await read_form(request)
    try:
        reason = require_reason(one(form, "reason"))
        job_id = one(form, "jobId") or None
        if b.tenant_id is not None:  # a key cancels only its own tenant's executions
            await run_in_threadpool(b.jobs.get, job_id or "")
        await run_in_threadpool(lambda: b.cancel(execution_id, job_id=job_id, reason=reason))
    except Exception as exc:
        return error_page(request, exc, "jobs")
    return see_other(f"/executions/{execution_id}", f"cancel asked: {reason}")
