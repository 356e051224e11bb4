"""The dead-letters page and its actions: retry or discard one letter, or every ticked one.

Letters are read from `executions.dlq` with their resolutions (`tickwheel.sdk.dead_letters`),
the ones the request's tenant may act on (as `GET /v1/dead-letters` shows them); the actions
are the API's (`routes_dead_letter_actions.act`), so a retry from the console triggers the
letter's job and records the same `DeadLetterResolution` a `POST /v1/dead-letters/{id}/retry`
does. One form holds the table: a row's buttons post it to that row's action (`formaction`),
so everything works with JavaScript off. A discard needs a reason; a retry does not.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.adapters.kafka.placement import step_workflow
from tickwheel.errors import InvalidInput
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.actions import who
from tickwheel.services.api.console.models import approx_duration
from tickwheel.services.api.console.render import error_page, one, page, read_form, see_other
from tickwheel.services.api.problems import from_exception
from tickwheel.services.api.routes_dead_letter_actions import act, visible_letters

router = APIRouter(include_in_schema=False)
STATES = ("unresolved", "resolved", "all")
DONE = {"retry": "retried", "discard": "discarded"}


def topic_letters(request: Request, b: Backend) -> list[dict[str, Any]]:
    """The letters the console lists (a unit test sets `app.state.console_dead_letters`)."""
    return visible_letters(request, b)


def _backend(request: Request) -> Backend:
    value: Backend = console_backend(request)
    return value


def letters_model(
    letters: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    now_ms: int,
    state: str,
    reason: str,
) -> dict[str, Any]:
    """Pure: the page's rows (oldest first, with age, job type and state) and its counts."""
    types = {j["jobId"]: j.get("type") for j in jobs}
    rows = []
    for letter in letters:
        resolution = letter.get("resolution")
        row = {
            **letter,
            "age": approx_duration(now_ms - int(letter["event_time"])),
            "job_type": types.get(letter.get("job_id") or ""),
            "state": resolution["action"] if resolution else "unresolved",
            "kind": _kind(letter),
            "workflow": step_workflow(letter.get("job_id")),
        }
        rows.append(row)
    counts = Counter(r["state"] == "unresolved" for r in rows)
    shown = [
        r for r in rows if state == "all" or (state == "unresolved") == (r["state"] == "unresolved")
    ]
    reasons = Counter(_reason_group(r["reason"]) for r in shown)
    if reason:
        shown = [r for r in shown if _reason_group(r["reason"]) == reason]
    shown.sort(key=lambda r: (int(r["event_time"]), r["dead_letter_id"]))
    return {
        "letters": shown,
        "unresolved_count": counts[True],
        "resolved_count": counts[False],
        "reasons": sorted(reasons.items()),
        "state": state,
        "reason": reason,
    }


def _kind(letter: dict[str, Any]) -> str:
    if (letter.get("job_id") or "").startswith("__wf/"):
        return "workflow step"
    if letter.get("execution_id"):
        return "execution"
    return {
        "undecodable": "undecodable record",
        "rejected": "refused record",
        "job": "job set aside",
    }.get(str(letter["dead_letter_id"]).split(":", 1)[0], "record")


def _reason_group(reason: str) -> str:
    """A reason without its particulars (`rejected: no job 'x' ...` → `rejected`)."""
    return reason.split(":", 1)[0].strip() or reason


def render_letters(
    request: Request,
    b: Backend,
    state: str = "unresolved",
    reason: str = "",
    error: str | None = None,
    code: int = 200,
) -> Response:
    letters = request.app.state.console_dead_letters(request, b)
    model = letters_model(letters, b.jobs.list(), b.now_ms(), state, reason)
    principal = getattr(request.state, "principal", None)
    # Retrying or discarding needs the admin scope (as on the API): without it, only read.
    can_act = principal is None or principal.can("admin")
    context = {
        "section": "dead-letters",
        **model,
        "states": STATES,
        "error": error,
        "can_act": can_act,
    }
    return page(request, "dead_letters.html", context, status=code)


@router.get("/dead-letters", response_class=HTMLResponse)
def dead_letters_page(
    request: Request,
    state: Annotated[str, Query(max_length=20)] = "unresolved",
    reason: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    try:
        b = _backend(request)
        return render_letters(request, b, state if state in STATES else "unresolved", reason)
    except Exception as exc:
        return error_page(request, exc, "dead-letters")


async def _act(request: Request, action: str, ids: list[str]) -> Response:
    b = _backend(request)
    form = await read_form(request)
    note = one(form, "reason").strip() or None
    try:
        if action not in ("retry", "discard"):
            raise InvalidInput("action", f"{action!r}; accepted: retry, discard")
        ids = ids or [i for i in form.get("letter", []) if i]
        if not ids:
            raise InvalidInput("letter", "none selected; accepted: one or more dead letters ticked")
        results = await run_in_threadpool(act, request, b, action, ids, note, who(form))
    except Exception as exc:
        problem = from_exception(exc)
        if problem.status >= 500:
            return error_page(request, exc, "dead-letters")
        return await run_in_threadpool(
            render_letters, request, b, error=problem.detail, code=problem.status
        )
    done = [r["deadLetterId"] for r in results if r["status"] == 200]
    refused = [f"{r['deadLetterId']}: {r['detail']}" for r in results if r["status"] != 200]
    if not done:
        return await run_in_threadpool(
            render_letters, request, b, error="; ".join(refused), code=results[0]["status"]
        )
    said = f"{DONE[action]} {len(done)}: {', '.join(done)}"
    if refused:
        said += f"; refused {len(refused)}: " + "; ".join(refused)
    return see_other("/dead-letters", said)


@router.post("/dead-letters/bulk")
async def bulk(request: Request) -> Response:
    form = await read_form(request)  # read once more by _act: the body is kept
    return await _act(request, one(form, "action"), [])


@router.post("/dead-letters/{dead_letter_id:path}/retry")
async def retry_one(request: Request, dead_letter_id: str) -> Response:
    return await _act(request, "retry", [dead_letter_id])


@router.post("/dead-letters/{dead_letter_id:path}/discard")
async def discard_one(request: Request, dead_letter_id: str) -> Response:
    return await _act(request, "discard", [dead_letter_id])
