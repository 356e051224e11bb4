"""`/alerts` (the watchdog's incidents) and `/dead-letters`, read from their topics.

Both are a tenant's own: an incident is its tenant's (one without a tenant is `default`'s);
a dead letter is the tenant's whose live job it names. A dead letter of no live job (an
undecodable record, a deleted job) is shown to the `default` tenant, the operators'.
`POST /alerts/{id}/ack` sends the watchdog the acknowledgement `tickwheel alerts ack` sends
(`watchdog.commands`); the watchdog applies it at its next evaluation. Replaying or discarding a
dead letter has no write path in tickwheel yet (docs/api.md, "Not yet").
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Query, Request, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from tickwheel.services.api.keys import DEFAULT_TENANT
from tickwheel.services.api.models import _Strict
from tickwheel.services.api.problems import Problem, problem_responses
from tickwheel.services.api.routes_jobs import MAX_PAGE, BackendDep
from tickwheel.services.api.tenancy import owner_of
from tickwheel.services.api.views import decode_cursor, encode_cursor

router = APIRouter(tags=["alerts"])

INCIDENT_EXAMPLE: dict[str, Any] = {
    "incident_id": "inc-job_absent-nightly-1",
    "fingerprint": "job_absent:nightly-reconcile",
    "kind": "job_absent",
    "subject": "nightly-reconcile",
    "job_id": "nightly-reconcile",
    "tenant_id": "acme",
    "state": "open",
    "severity": "critical",
    "message": "no success of nightly-reconcile within 26h",
    "opened_at": 1796116313410,
    "resolved_at": None,
    "evidence": {},
    "transitions": [{"alert_id": "a-1", "transition": "opened", "event_time": 1796116313410}],
}
LETTER_EXAMPLE: dict[str, Any] = {
    "dead_letter_id": "exec-3f0c:3",
    "event_time": 1796116313410,
    "reason": "max_attempts_exhausted",
    "source_topic": "executions.events",
    "source_partition": 2,
    "source_offset": 41,
    "execution_id": "3f0c2a9e-7d1b-4c55-a0a4-9d3c6f2b1e77",
    "job_id": "nightly-reconcile",
    "attempt": 3,
    "error": "ConnectionError: upstream refused",
    "payload": '{"date":"2026-11-30"}',
    "raw_value_base64": None,
    "dlq_partition": 0,
    "dlq_offset": 7,
}


def _example(example: Any, description: str) -> dict[str, Any]:
    schema = {"type": "object", "additionalProperties": True}
    return {
        "description": description,
        "content": {"application/json": {"schema": schema, "example": example}},
    }


def _incidents(b: Any) -> list[dict[str, Any]]:
    from tickwheel.sdk.alerts import incidents, read_transitions

    tenant = b.tenant_id or DEFAULT_TENANT
    return [i for i in incidents(read_transitions(b.bootstrap)) if owner_of(i) == tenant]


@router.get(
    "/alerts",
    summary="The watchdog's incidents (the tenant's), oldest first",
    responses={
        200: _example({"items": [INCIDENT_EXAMPLE]}, "Incidents"),
        **problem_responses(422, 503),
    },
)
async def list_alerts(
    b: BackendDep,
    state: Annotated[Literal["open", "resolved"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> dict[str, Any]:
    found = await run_in_threadpool(_incidents, b)
    if state is not None:
        found = [i for i in found if i["state"] == state]
    return {"items": found[-limit:]}


@router.get(
    "/alerts/{alert_id}",
    summary="One incident, by its id or one transition's id",
    responses={200: _example(INCIDENT_EXAMPLE, "The incident"), **problem_responses(404, 503)},
)
async def get_alert(
    b: BackendDep, alert_id: Annotated[str, Path(min_length=1, max_length=300)]
) -> dict[str, Any]:
    for incident in await run_in_threadpool(_incidents, b):
        ids = {incident["incident_id"], *(t["alert_id"] for t in incident["transitions"])}
        if alert_id in ids:
            return incident
    raise Problem(404, "not-found", f"no incident or transition {alert_id!r}")


class AckBody(_Strict):
    note: str = Field(min_length=1, max_length=500, examples=["on it: INC-42"])
    by: str | None = Field(default=None, min_length=1, max_length=100)


def _acknowledge(b: Any, wanted: str, by: str, note: str) -> dict[str, Any]:
    from tickwheel.sdk.alerts import ack_command, publish_ack

    incident = next(
        (
            i
            for i in _incidents(b)
            if wanted in {i["incident_id"], *(t["alert_id"] for t in i["transitions"])}
        ),
        None,
    )
    if incident is None:
        raise Problem(404, "not-found", f"no incident or transition {wanted!r}")
    if incident["state"] != "open":
        raise Problem(
            409,
            "incident-resolved",
            f"incident {incident['incident_id']} is resolved; accepted: an open one",
        )
    command = ack_command(incident["incident_id"], by, note, b.now_ms(), str(uuid.uuid4()))
    publish_ack(b.bootstrap, command)
    return {
        "incidentId": incident["incident_id"],
        "commandId": command["alert_id"],
        "by": by,
        "note": note,
    }


@router.post(
    "/alerts/{alert_id}/ack",
    status_code=202,
    summary="Acknowledge an open incident (applied at the watchdog's next evaluation)",
    responses={
        202: _example(
            {
                "incidentId": "inc-job_absent-nightly-1",
                "commandId": "9a7c7d0e-51f4-4c0e-8f7a-2f4b1c0d9e11",
                "by": "api-key 3f9c0d1e2a4b5c6d",
                "note": "on it: INC-42",
            },
            "The acknowledgement sent",
        ),
        **problem_responses(404, 409, 422, 503),
    },
)
async def ack_alert(
    request: Request,
    b: BackendDep,
    alert_id: Annotated[str, Path(min_length=1, max_length=300)],
    body: Annotated[AckBody, Body(openapi_examples={"ack": {"value": {"note": "on it: INC-42"}}})],
) -> dict[str, Any]:
    principal = request.state.principal
    by = body.by or f"api-key {principal.key_id or 'development'}"
    result: dict[str, Any] = await run_in_threadpool(_acknowledge, b, alert_id, by, body.note)
    return result


def _letters(request: Request, b: Any, job_id: str | None) -> list[dict[str, Any]]:
    from tickwheel.sdk.dead_letters import read_dead_letters

    tenant = b.tenant_id or DEFAULT_TENANT
    owned = {r["jobId"] for r in b.jobs.list()}
    live = {r["jobId"] for r in request.app.state.backend.jobs.list()}
    out = []
    for letter in read_dead_letters(b.bootstrap):
        job = letter.get("job_id")
        visible = job in owned or (tenant == DEFAULT_TENANT and job not in live)
        if visible and (job_id is None or job == job_id):
            out.append(letter)
    return out


def _position(letter: dict[str, Any]) -> str:
    return f"{letter['event_time']:020d}/{letter['dead_letter_id']}"


@router.get(
    "/dead-letters",
    summary="Dead letters (the tenant's), oldest first, a page at a time",
    responses={
        200: _example({"items": [LETTER_EXAMPLE], "nextCursor": None}, "A page of dead letters"),
        **problem_responses(422, 503),
    },
)
async def list_dead_letters(
    request: Request,
    b: BackendDep,
    response: Response,
    jobId: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> dict[str, Any]:
    after = decode_cursor(cursor) if cursor else None
    letters = await run_in_threadpool(_letters, request, b, jobId)
    remaining = [d for d in letters if after is None or _position(d) > after]
    page = remaining[:limit]
    next_cursor = encode_cursor(_position(page[-1])) if len(remaining) > limit else None
    if next_cursor:
        response.headers["Link"] = (
            f'</v1/dead-letters?limit={limit}&cursor={next_cursor}>; rel="next"'
        )
    return {"items": page, "nextCursor": next_cursor}


@router.get(
    "/dead-letters/{dead_letter_id}",
    summary="One dead letter",
    responses={200: _example(LETTER_EXAMPLE, "The dead letter"), **problem_responses(404, 503)},
)
async def get_dead_letter(
    request: Request,
    b: BackendDep,
    dead_letter_id: Annotated[str, Path(min_length=1, max_length=500)],
) -> dict[str, Any]:
    for letter in await run_in_threadpool(_letters, request, b, None):
        if letter["dead_letter_id"] == dead_letter_id:
            return letter
    raise Problem(404, "not-found", f"no dead letter {dead_letter_id!r}")
