"""`POST /dead-letters/{id}/retry|discard` and their bulk forms (decision 0102).

A retry asks the letter's job for a new execution (a trigger to its owning timer) and records
the letter as `retried`; a discard records it as `discarded` with a required note. Both write
a `DeadLetterResolution` on `executions.dlq.resolutions` (`tickwheel.sdk.dead_letters`), after
which the letter lists as resolved. A tenant acts only on the dead letters it can read
(`routes_alerts`): those of its own live jobs, plus, for `default`, those of no live job.
The door asks these routes for the `admin` scope (decision 0068).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from tickwheel.errors import InvalidInput
from tickwheel.sdk.dead_letters import (
    AlreadyResolved,
    DeadLettersClient,
    NotRetryable,
    UnknownDeadLetter,
    read_resolutions,
    with_resolutions,
)
from tickwheel.services.api.models import _Strict
from tickwheel.services.api.problems import Problem, from_exception, problem_responses
from tickwheel.services.api.routes_alerts import _letters
from tickwheel.services.api.routes_jobs import BackendDep

router = APIRouter(tags=["alerts"])
#: The most letters one bulk call acts on (each is a look-up and a record).
MAX_BULK = 500

RESOLUTION_EXAMPLE: dict[str, Any] = {
    "resolution_id": "5b1d8f0e-2a6c-4d1e-9c3b-7f0a1e2d3c4b",
    "dead_letter_id": "dlq:3f0c2a9e-7d1b-4c55-a0a4-9d3c6f2b1e77",
    "event_time": 1796116313410,
    "action": "retried",
    "by": "api-key 3f9c0d1e2a4b5c6d",
    "note": "upstream fixed",
    "job_id": "nightly-reconcile",
    "execution_id": "3f0c2a9e-7d1b-4c55-a0a4-9d3c6f2b1e77",
    "tenant_id": "acme",
    "retry_command_id": "9a7c7d0e-51f4-4c0e-8f7a-2f4b1c0d9e11",
    "retry_execution_id": "0d3e5a47-8b1c-5f2e-9a6d-4c7b8e1f2a30",
}


class RetryBody(_Strict):
    note: str | None = Field(default=None, max_length=500, examples=["upstream fixed"])
    by: str | None = Field(default=None, min_length=1, max_length=100)


class DiscardBody(_Strict):
    note: str = Field(min_length=1, max_length=500, examples=["test data, not worth a rerun"])
    by: str | None = Field(default=None, min_length=1, max_length=100)


class BulkRetryBody(RetryBody):
    ids: list[str] = Field(min_length=1, max_length=MAX_BULK)


class BulkDiscardBody(DiscardBody):
    ids: list[str] = Field(min_length=1, max_length=MAX_BULK)


def problem_of(exc: Exception) -> Problem:
    """The problem a refused retry or discard stands for."""
    if isinstance(exc, UnknownDeadLetter):
        return Problem(404, "not-found", str(exc))
    if isinstance(exc, AlreadyResolved):
        return Problem(409, "dead-letter-resolved", str(exc), resolution=exc.resolution)
    if isinstance(exc, NotRetryable):
        return Problem(409, "not-retryable", str(exc), reason=exc.reason)
    return from_exception(exc)


def visible_letters(request: Request, b: Any) -> list[dict[str, Any]]:
    """The dead letters this request's tenant may act on, each with its resolution."""
    return with_resolutions(_letters(request, b, None), read_resolutions(b.bootstrap))


def _client(b: Any) -> DeadLettersClient:
    return DeadLettersClient(b.bootstrap, b.clock, jobs=b.jobs, tenant_id=b.tenant_id)


def act(
    request: Request, b: Any, action: str, ids: list[str], note: str | None, by: str
) -> list[dict[str, Any]]:
    """Retry or discard each of `ids` (once each, in order): its resolution, or its problem."""
    if action == "discard" and not (note or "").strip():
        raise InvalidInput("note", "required to discard; accepted: a few words on why")
    letters = visible_letters(request, b)
    client = _client(b)
    results: list[dict[str, Any]] = []
    for dead_letter_id in dict.fromkeys(ids):
        try:
            if action == "retry":
                done = client.retry(dead_letter_id, by=by, note=note, letters=letters)
            else:
                done = client.discard(dead_letter_id, by=by, note=note or "", letters=letters)
        except Exception as exc:
            problem = problem_of(exc)
            if problem.status >= 500:
                raise
            results.append(
                {
                    "deadLetterId": dead_letter_id,
                    "status": problem.status,
                    "code": problem.code,
                    "detail": problem.detail,
                }
            )
            continue
        results.append({"deadLetterId": dead_letter_id, "status": 200, "resolution": done})
    return results


def _by(request: Request, given: str | None) -> str:
    return given or f"api-key {request.state.principal.key_id or 'development'}"


def _resolve_one(
    request: Request, b: Any, action: str, letter_id: str, note: str | None, by: str
) -> dict[str, Any]:
    client = _client(b)
    letters = visible_letters(request, b)
    try:
        if action == "retry":
            return dict(client.retry(letter_id, by=by, note=note, letters=letters))
        return dict(client.discard(letter_id, by=by, note=note or "", letters=letters))
    except (UnknownDeadLetter, AlreadyResolved, NotRetryable) as exc:
        raise problem_of(exc) from None


async def _one(
    request: Request, b: Any, action: str, letter_id: str, note: str | None, by: str | None
) -> dict[str, Any]:
    resolution: dict[str, Any] = await run_in_threadpool(
        _resolve_one, request, b, action, letter_id, note, _by(request, by)
    )
    return resolution


_REFUSALS = problem_responses(404, 409, 422, 503)


@router.post(
    "/dead-letters/{dead_letter_id}/retry",
    status_code=202,
    summary="Retry a dead letter: its job is triggered again, the letter marked retried",
    responses={
        202: {
            "description": "The resolution recorded",
            "content": {"application/json": {"example": RESOLUTION_EXAMPLE}},
        },
        **_REFUSALS,
    },
)
async def retry_dead_letter(
    request: Request,
    b: BackendDep,
    dead_letter_id: Annotated[str, Path(min_length=1, max_length=500)],
    body: Annotated[RetryBody | None, Body()] = None,
) -> dict[str, Any]:
    given = body or RetryBody()
    return await _one(request, b, "retry", dead_letter_id, given.note, given.by)


@router.post(
    "/dead-letters/{dead_letter_id}/discard",
    summary="Discard a dead letter (nothing re-run), with a required note",
    responses={
        200: {
            "description": "The resolution recorded",
            "content": {
                "application/json": {
                    "example": {
                        **RESOLUTION_EXAMPLE,
                        "action": "discarded",
                        "retry_command_id": None,
                        "retry_execution_id": None,
                    }
                }
            },
        },
        **_REFUSALS,
    },
)
async def discard_dead_letter(
    request: Request,
    b: BackendDep,
    dead_letter_id: Annotated[str, Path(min_length=1, max_length=500)],
    body: DiscardBody,
) -> dict[str, Any]:
    return await _one(request, b, "discard", dead_letter_id, body.note, body.by)


_BULK_EXAMPLE = {
    "results": [
        {
            "deadLetterId": RESOLUTION_EXAMPLE["dead_letter_id"],
            "status": 200,
            "resolution": RESOLUTION_EXAMPLE,
        },
        {
            "deadLetterId": "undecodable:jobs.definitions:2:41",
            "status": 409,
            "code": "not-retryable",
            "detail": "dead letter 'undecodable:jobs.definitions:2:41' cannot be retried: ...",
        },
    ]
}


@router.post(
    "/dead-letters/retry",
    summary="Retry several dead letters; one result each",
    responses={
        200: {
            "description": "Each letter's resolution or problem",
            "content": {"application/json": {"example": _BULK_EXAMPLE}},
        },
        **problem_responses(422, 503),
    },
)
async def retry_dead_letters(
    request: Request, b: BackendDep, body: BulkRetryBody
) -> dict[str, Any]:
    results = await run_in_threadpool(
        act, request, b, "retry", body.ids, body.note, _by(request, body.by)
    )
    return {"results": results}


@router.post(
    "/dead-letters/discard",
    summary="Discard several dead letters; one result each",
    responses={
        200: {
            "description": "Each letter's resolution or problem",
            "content": {"application/json": {"example": _BULK_EXAMPLE}},
        },
        **problem_responses(422, 503),
    },
)
async def discard_dead_letters(
    request: Request, b: BackendDep, body: BulkDiscardBody
) -> dict[str, Any]:
    results = await run_in_threadpool(
        act, request, b, "discard", body.ids, body.note, _by(request, body.by)
    )
    return {"results": results}
