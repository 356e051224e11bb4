"""RFC 9457 problem details: every error the API returns is `application/problem+json`.

A problem carries a stable `type` (a URN, so no client ever needs the network to resolve it)
and `code`, a `title`, the `status`, a `detail` saying what was wrong and what is accepted,
`errors[]` (each a JSON `pointer` into the request body, or the query/path `parameter`, with
its `detail`), and the `requestId` echoed in the `X-Request-Id` header.

FastAPI's own `{"detail": ...}` answers (request validation, 404 for an unknown route, 405)
are turned into problems here too, so a client parses one error shape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from tickwheel.adapters.kafka.admin import BrokerUnreachable
from tickwheel.adapters.kafka.reader import ReadTimedOut
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.history import ExecutionNotFound
from tickwheel.ports.history import HistoryStoreError
from tickwheel.sdk.job_commands import VerdictPending
from tickwheel.sdk.jobs import JobExists, UnknownJob
from tickwheel.sdk.workflows import IncompatibleDefinition, UnknownWorkflow
from tickwheel.services.api.asgi import REQUEST_ID_HEADER, RequestIds, new_request_id

log = logging.getLogger("tickwheel.api")

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:tickwheel:problem:"
RETRY_AFTER_S = 5

# code -> title; the codes are the stable contract (docs/api.md lists them).
TITLES: dict[str, str] = {
    "malformed-request": "The request body is not valid JSON",
    "validation-error": "The request is not acceptable",
    "not-found": "No such resource",
    "job-exists": "A job with this id exists already",
    "version-conflict": "The job changed since the version you expected",
    "precondition-failed": "If-Match does not match the current version",
    "method-not-allowed": "Method not allowed",
    "kafka-unavailable": "The Kafka cluster is not reachable",
    "history-unavailable": "The execution history is not reachable",
    "internal-error": "Internal error",
    "unauthenticated": "No valid API key",
    "forbidden": "The key lacks the scope this call needs",
    "rate-limited": "Too many requests for this tenant",
    "payload-too-large": "The request body is over the size limit",
    "idempotency-key-reused": "The Idempotency-Key was used for another request",
    "idempotency-key-in-use": "A request with this Idempotency-Key is still running",
    "query-refused": "The history refused the statement",
    "incident-resolved": "The incident is resolved already",
    "incompatible-definition": "The workflow definition version may not follow the previous one",
    "approval-closed": "The approval is not waiting on the token's round",
}


class Problem(Exception):
    """An error response: raise it from a route; the handler renders it."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        errors: Sequence[Mapping[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = [dict(e) for e in errors]
        self.headers = dict(headers or {})
        self.extensions = extensions


def pointer(path: Iterable[Any]) -> str:
    """A JSON Pointer (RFC 6901) to `path` in the request body."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def invalid_input(
    exc: InvalidInput, *, aliases: Mapping[str, str] | None = None, where: str = "body"
) -> Problem:
    """A core validation error as a 422 naming the field. `aliases` maps a definition field
    to the name this route's body uses (`cron` is `expression` on /schedules); `where` is
    `body` (a JSON pointer) or `query` (a parameter name)."""
    field = (aliases or {}).get(exc.field, exc.field)
    entry: dict[str, Any] = {"detail": exc.message}
    if where == "body":
        entry["pointer"] = "" if field == "definition" else pointer(field.split("."))
    else:
        entry["parameter"] = field
    return Problem(422, "validation-error", f"{field}: {exc.message}", errors=[entry])


def request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or _new_request_id(request))


def _new_request_id(request: Request) -> str:
    return new_request_id(request.scope)


def render(request: Request, problem: Problem) -> JSONResponse:
    rid = request_id(request)
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + problem.code,
        "code": problem.code,
        "title": TITLES.get(problem.code, problem.code),
        "status": problem.status,
        "detail": problem.detail,
        "instance": request.url.path,
        "requestId": rid,
        **problem.extensions,
    }
    if problem.errors:
        body["errors"] = problem.errors
    headers = {REQUEST_ID_HEADER: rid, **problem.headers}
    return JSONResponse(body, status_code=problem.status, headers=headers, media_type=PROBLEM_JSON)


def from_exception(exc: Exception) -> Problem:
    """The problem an exception escaping a route stands for (500 for anything unexpected)."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, UnknownJob):
        return Problem(404, "not-found", str(exc))
    if isinstance(exc, UnknownWorkflow):
        return Problem(404, "not-found", str(exc))
    if isinstance(exc, IncompatibleDefinition):
        return Problem(422, "incompatible-definition", str(exc), reasons=exc.reasons)
    if isinstance(exc, ExecutionNotFound):
        return Problem(404, "not-found", str(exc))
    if isinstance(exc, JobExists):
        return Problem(409, "job-exists", str(exc), jobId=exc.job_id)
    if isinstance(exc, InvalidInput):
        return invalid_input(exc)
    if isinstance(exc, VerdictPending):  # written and being judged (a console form, a route
        # without its own 202): say so, with the command to ask about, never a 500.
        return Problem(
            202,
            "verdict-pending",
            f"the job writer has not answered yet (command {exc.command_id}); it will be "
            "judged: reload in a moment",
            commandId=exc.command_id,
            headers={"Location": f"/v1/job-commands/{exc.command_id}", "Retry-After": "1"},
        )
    retry = {"Retry-After": str(RETRY_AFTER_S)}
    # confluent_kafka's KafkaException is matched by name: only the Kafka adapter imports it.
    # ProduceFailed too: a write the broker did not acknowledge in time is not the caller's fault.
    if isinstance(exc, BrokerUnreachable | ReadTimedOut) or type(exc).__name__ in (
        "KafkaException",
        "ProduceFailed",
    ):
        return Problem(503, "kafka-unavailable", str(exc), headers=retry)
    if isinstance(exc, HistoryStoreError):
        return Problem(503, "history-unavailable", str(exc), headers=retry)
    if isinstance(exc, TickwheelError):
        return Problem(422, "validation-error", str(exc))
    return Problem(500, "internal-error", "the server failed; the request id is in the logs")


def _validation_problem(exc: RequestValidationError) -> Problem:
    errors: list[dict[str, Any]] = []
    malformed = False
    for error in exc.errors():
        loc = list(error.get("loc", ()))
        where, path = (loc[0], loc[1:]) if loc else ("body", [])
        if error.get("type") == "json_invalid":
            malformed = True
        entry: dict[str, Any] = {"detail": str(error.get("msg", "invalid"))}
        if where == "body":
            entry["pointer"] = pointer(path)
        else:
            entry["parameter"] = ".".join(str(p) for p in path)
            entry["in"] = where
        errors.append(entry)
    if malformed:
        return Problem(400, "malformed-request", "the body is not valid JSON", errors=errors)
    first = errors[0] if errors else {"detail": "invalid"}
    where_text = first.get("pointer") or first.get("parameter") or "body"
    return Problem(422, "validation-error", f"{where_text}: {first['detail']}", errors=errors)


def install(app: FastAPI) -> None:
    """Route every error through `render`, and give every response a request id."""

    app.add_middleware(RequestIds)  # plain ASGI (decision 0153)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return render(request, _validation_problem(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "bad-request")
        problem = Problem(exc.status_code, code, str(exc.detail), headers=exc.headers)
        return render(request, problem)

    async def _any(request: Request, exc: Exception) -> JSONResponse:
        problem = from_exception(exc)
        if problem.status >= 500:
            log.warning(
                "request failed",
                exc_info=exc if problem.status == 500 else None,
                extra={
                    "action": "api_request_failed",
                    "request_id": request_id(request),
                    "path": request.url.path,
                    "code": problem.code,
                },
            )
        return render(request, problem)

    # Expected errors are answered by Starlette's exception middleware; `Exception` is
    # answered last, by the server-error middleware, which then re-raises it for the server
    # to log (a 500, or a Kafka client error matched by name).
    for kind in (Problem, TickwheelError, Exception):
        app.add_exception_handler(kind, _any)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for the problems an operation can return, plus `default`
    (which also keeps FastAPI from documenting its own 422 shape)."""
    content = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    entries: dict[int | str, dict[str, Any]] = {
        status: {"description": TITLES_BY_STATUS.get(status, "Problem"), "content": content}
        for status in statuses
    }
    entries["default"] = {"description": "A problem (RFC 9457)", "content": content}
    return entries


TITLES_BY_STATUS = {
    400: "Malformed request",
    401: "No valid API key (WWW-Authenticate)",
    403: "The key lacks the scope",
    404: "Not found (also another tenant's object)",
    409: "Conflict (job exists, or version conflict with currentVersion)",
    412: "If-Match does not match",
    413: "The body is over the size limit",
    422: "Validation error, with errors[] pointing at the fields",
    429: "Over the tenant's rate limit (Retry-After)",
    503: "Kafka or the history unreachable (Retry-After)",
}
