"""Job writes judged by the single writer (decisions 0099, 0126): the create and update every
write route shares (a stale version is a 409 with `currentVersion`), what a route answers when
a verdict is late (202 and the command's status resource), and the keyed create's answer that
the judge records with the job.

`GET /v1/job-commands/{commandId}` answers from the verdicts this API instance has read on
`jobs.verdicts` (the status resource of a 202), on any instance (decision 0166): the verdict,
with the job as it was written, when the command's id names the caller's tenant or its job is
the caller's; `pending` for a command of the caller's tenant sent after this instance began
reading every verdict and not answered yet. Anything else is a 404: another tenant's, never
sent, or older than this process.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from tickwheel.adapters.kafka.client import KafkaException
from tickwheel.errors import InvalidInput
from tickwheel.sdk.command_ids import PENDING_AT_MOST_MS, command_sent_at
from tickwheel.sdk.job_commands import Verdict, VerdictPending
from tickwheel.sdk.jobs import VersionConflict
from tickwheel.services.api.models import JOB_EXAMPLE
from tickwheel.services.api.problems import (
    Problem,
    invalid_input,
    problem_responses,
    request_id,
)
from tickwheel.services.api.tenancy import owner_of
from tickwheel.services.api.views import template_text
from tickwheel.services.api.writes import KEYED_WRITE, KeyedWrite

log = logging.getLogger("tickwheel.api")

if TYPE_CHECKING:
    from tickwheel.services.api.backend import Backend

router = APIRouter(tags=["jobs"])
F = TypeVar("F", bound=Callable[..., Any])
COMMAND_ID = Annotated[
    str, Path(min_length=1, max_length=100, examples=["5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10"])
]
PENDING_EXAMPLE = {
    "commandId": "5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10",
    "jobId": "nightly-reconcile",
    "status": "pending",
}


def command_view(command: dict[str, Any]) -> dict[str, Any]:
    return {
        "commandId": command["command_id"],
        "jobId": command["job_id"],
        "kind": command["kind"],
        "requestedAt": command["requested_at"],
        "rangeStart": command["range_start"],
        "rangeEnd": command["range_end"],
    }


COMMAND_EXAMPLE = {
    "commandId": "5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10",
    "jobId": "nightly-reconcile",
    "kind": "trigger",
    "requestedAt": 1796116313410,
    "rangeStart": None,
    "rangeEnd": None,
}


def create_record(b: Backend, spec: dict[str, Any], aliases: dict[str, str] | None = None) -> Any:
    try:
        return b.jobs.create(template_text(spec))
    except InvalidInput as exc:
        raise invalid_input(exc, aliases=aliases) from None


async def create_record_async(
    b: Backend, spec: Mapping[str, Any], aliases: dict[str, str] | None = None
) -> Any:
    """`create_record` for a coroutine: with no thread held while the verdict comes when the
    jobs client can (writes known to be commands, decision 0165), else on a route thread."""
    jobs: Any = b.jobs
    ask = getattr(jobs, "creates_await", None)
    if ask is None or not ask():
        return await run_in_threadpool(create_record, b, dict(spec), aliases)
    try:
        return dict(await jobs.create_async(template_text(dict(spec))))
    except InvalidInput as exc:
        raise invalid_input(exc, aliases=aliases) from None


def version_conflict(job_id: str, current: int, expected: int) -> Problem:
    return Problem(
        409,
        "version-conflict",
        f"job {job_id!r} is at version {current}, not {expected}; read it again and retry",
        currentVersion=current,
        errors=[{"pointer": "/expectedVersion", "detail": f"the current version is {current}"}],
    )


def update_record(
    b: Backend,
    job_id: str,
    changes: dict[str, Any],
    expected: int | None,
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`JobsClient.update` with a stale `expected` version answered as a 409."""
    current = b.jobs.get(job_id)
    if expected is not None and expected != current["version"]:
        raise version_conflict(job_id, current["version"], expected)
    try:
        return b.jobs.update(job_id, template_text(changes), expected)
    except VersionConflict as exc:  # the judge's verdict, or the client's own check
        raise version_conflict(job_id, exc.current_version, expected or 0) from None
    except InvalidInput as exc:
        if exc.field == "expectedVersion":  # moved on between our read and the client's
            latest = b.jobs.get(job_id)["version"]
            raise version_conflict(job_id, latest, expected or 0) from None
        raise invalid_input(exc, aliases=aliases) from None


async def update_record_async(
    b: Backend,
    job_id: str,
    changes: dict[str, Any],
    expected: int | None,
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`update_record` for a coroutine: awaited with no thread held for the verdicts when
    the jobs client can (writes known to be commands), else on a route thread."""
    jobs: Any = b.jobs
    ask = getattr(jobs, "creates_await", None)
    if ask is None or not ask() or not hasattr(jobs, "update_async"):
        return await run_in_threadpool(update_record, b, job_id, changes, expected, aliases)
    current = await run_in_threadpool(jobs.get, job_id)
    if expected is not None and expected != current["version"]:
        raise version_conflict(job_id, current["version"], expected)
    try:
        return dict(await jobs.update_async(job_id, template_text(changes), expected))
    except VersionConflict as exc:  # the judge's verdict, or the client's own check
        raise version_conflict(job_id, exc.current_version, expected or 0) from None
    except InvalidInput as exc:
        if exc.field == "expectedVersion":  # moved on between our read and the client's
            latest = (await run_in_threadpool(jobs.get, job_id))["version"]
            raise version_conflict(job_id, latest, expected or 0) from None
        raise invalid_input(exc, aliases=aliases) from None


def pending_view(exc: VerdictPending) -> JSONResponse:
    """The 202 of a write whose verdict is late: the command will be judged."""
    return JSONResponse(
        {"commandId": exc.command_id, "jobId": exc.job_id, "status": "pending"},
        status_code=202,
        headers={"Location": f"/v1/job-commands/{exc.command_id}", "Retry-After": "1"},
    )


def answers_pending(route: F) -> F:
    """A write route that answers 202 (with the status resource) when the verdict is late."""

    if inspect.iscoroutinefunction(route):

        @functools.wraps(route)
        async def waited(*args: Any, **kwargs: Any) -> Any:
            try:
                return await route(*args, **kwargs)
            except VerdictPending as exc:
                return pending_view(exc)

        return waited  # type: ignore[return-value]

    @functools.wraps(route)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return route(*args, **kwargs)
        except VerdictPending as exc:
            return pending_view(exc)

    return wrapper  # type: ignore[return-value]


def keyed_write(
    request: Request, render: Callable[[dict[str, Any]], JSONResponse]
) -> KeyedWrite | None:
    """The idempotency context of a keyed create (set by the door's idempotency store)."""
    slot = getattr(request.state, "idempotency_slot", None)
    wanted = getattr(request.state, "idempotency_fingerprint", None)
    if slot is None or wanted is None:
        return None

    def answer(record: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        response = render(record)
        kept = {
            k: v for k, v in response.headers.items() if k in ("content-type", "location", "etag")
        }
        return response.status_code, bytes(response.body), kept

    return KeyedWrite(slot, wanted, request_id(request), answer)


async def run_keyed_async(
    request: Request, keyed: KeyedWrite | None, write: Callable[[], Awaitable[Any]]
) -> Any:
    """`write()` with `keyed` visible to the jobs client; marks the request when the judge
    recorded the answer (the idempotency store then only holds it)."""
    token = KEYED_WRITE.set(keyed)
    try:
        return await write()
    finally:
        KEYED_WRITE.reset(token)
        if keyed is not None and keyed.recorded:
            request.state.idempotency_recorded = True


def recorded_response(keyed: KeyedWrite) -> JSONResponse | None:
    """The answer the judge recorded, sent as it is, so the first answer and a replay agree."""
    if not keyed.recorded or keyed.answer is None:
        return None
    status, body, headers = keyed.answer
    response = JSONResponse(None, status_code=status, headers=headers)
    response.body = body
    response.headers["content-length"] = str(len(body))
    return response


def verdict_view(verdict: Verdict) -> dict[str, Any]:
    return {
        "commandId": verdict.command_id,
        "jobId": verdict.job_id,
        "status": verdict.outcome,
        "currentVersion": verdict.current_version,
        "detail": verdict.detail,
    }


@router.get(
    "/job-commands/{command_id}",
    summary="The verdict of a job write answered 202 (pending, or what the judge decided)",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {
                        **PENDING_EXAMPLE,
                        "status": "updated",
                        "currentVersion": 2,
                        "detail": None,
                        "job": JOB_EXAMPLE,
                    }
                }
            }
        },
        **problem_responses(404),
    },
)
def job_command(request: Request, command_id: COMMAND_ID) -> dict[str, Any]:
    jobs = request.app.state.backend.jobs
    status = jobs.command_status(command_id) if hasattr(jobs, "command_status") else None
    principal = getattr(request.state, "principal", None)
    tenant = None if principal is None else principal.tenant_id
    # Whose the command is, from its id alone (decision 0166): any instance can tell.
    sent_at = None if tenant is None else command_sent_at(command_id, tenant)
    if isinstance(status, Verdict):
        # The JSON edge: the typed record becomes the view's document here.
        job = None if status.definition is None else dict(status.definition)
        if tenant is None or sent_at is not None or (job is not None and owner_of(job) == tenant):
            return _verdict_answer(request, status)
        status = None  # another tenant's: as unknown as a command never sent
    if status == "pending" and (tenant is None or sent_at is not None):
        return {"commandId": command_id, "jobId": None, "status": "pending"}
    if status is None and sent_at is not None and _still_judged(jobs, sent_at, request):
        # Sent by another instance, its verdict not on jobs.verdicts yet (this one reads
        # every verdict since before it was sent): being judged.
        return {"commandId": command_id, "jobId": None, "status": "pending"}
    if status is None and sent_at is not None and hasattr(jobs, "command_status"):
        # The asker's command, sent before this instance followed the verdicts (decision 0180).
        found = _looked_up(request, command_id, sent_at)
        if found is not None:
            return _verdict_answer(request, found)
        if request.app.state.backend.now_ms() - sent_at < PENDING_AT_MOST_MS:
            return {"commandId": command_id, "jobId": None, "status": "pending"}
    raise Problem(
        404,
        "not-found",
        f"no job command {command_id!r} known to this API "
        "instance (another tenant's, never sent, or its verdict is gone from "
        "jobs.verdicts)",
    )


def _verdict_answer(request: Request, verdict: Verdict) -> dict[str, Any]:
    view = verdict_view(verdict)
    if verdict.definition is not None:
        from tickwheel.services.api.views import job_view

        view["job"] = job_view(dict(verdict.definition), request.app.state.backend.now_ms())
    return view


def _looked_up(request: Request, command_id: str, sent_at: int) -> Verdict | None:
    """The command's verdict read from jobs.verdicts (only where the backend has a broker)."""
    backend = request.app.state.backend
    clients = getattr(request.app.state, "verdict_lookup_clients", None)
    if clients is None:
        from tickwheel.adapters.kafka.broker_clients import BrokerClients

        clients = request.app.state.verdict_lookup_clients = BrokerClients(backend.bootstrap)
    from tickwheel.services.api.verdict_lookup import find_verdict

    try:
        value = find_verdict(clients, command_id, sent_at)
    except KafkaException as exc:  # the broker away: as not found (pending, while it may be)
        log.warning(
            "verdict look-up failed",
            extra={"action": "api_verdict_lookup_failed", "error": str(exc)},
        )
        return None
    return None if value is None else Verdict.of(value)


def _still_judged(jobs: Any, sent_at: int, request: Request) -> bool:
    """A command sent at `sent_at` whose verdict this instance would have read, and not so
    old that the judge has answered it anyway (an expired command gets an `invalid` one)."""
    since = getattr(jobs, "verdicts_followed_since_ms", lambda: None)()
    now = request.app.state.backend.now_ms()
    return since is not None and since <= sent_at and now - sent_at < PENDING_AT_MOST_MS
