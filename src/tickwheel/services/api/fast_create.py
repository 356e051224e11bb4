"""`POST /jobs` without FastAPI's request machinery (decision 0165).

A create is the API's hottest write (issue 13 aims at 1,000 a second). FastAPI runs each
request through its error and telemetry layers, the exception middleware, the router's
match, the dependency solver and the body's field validation before the route's first line:
~30% of the API's CPU per create, measured (bench/bench_api_profile.py). `FastCreates` is a
plain ASGI layer just outside FastAPI, inside the door, the metrics and the request id (so
keys, scopes, limits, idempotency and the audit are the same): a well-formed JSON body that
`JobSpec` accepts goes straight to the route's own function (`routes_jobs.create_job`, the
same code, answers and 202); anything else — a body that is not JSON, one the model refuses,
another content type — goes to FastAPI untouched, so every refusal is the one it gives.
Errors raised by the route are rendered by the same function the app's handlers use.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickwheel.services.api.asgi import header, replaying
from tickwheel.services.api.idempotency import parsed_body
from tickwheel.services.api.models import JobSpec
from tickwheel.services.api.problems import from_exception, render, request_id

log = logging.getLogger("tickwheel.api")
PATHS = ("/jobs", "/v1/jobs")


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class FastCreates:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._routes: dict[str, Any] | None = None

    def _route(self, scope: Scope, path: str) -> Any:
        """The FastAPI route this request would have matched (the metrics label it by it)."""
        if self._routes is None:
            routes = scope["app"].router.routes
            self._routes = {
                r.path: r
                for r in routes
                if getattr(r, "path", None) in PATHS and "POST" in r.methods
            }
        return self._routes.get(path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path")
        if scope["type"] != "http" or scope["method"] != "POST" or path not in PATHS:
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        spec = self._spec(scope, body)
        if spec is None:  # FastAPI gives its own answer (a 422, a 415...)
            await self.app(scope, replaying(body, receive), send)
            return
        from tickwheel.services.api.routes_jobs import backend, create_job

        route = self._route(scope, str(path))
        if route is not None:
            scope["route"] = route
        request = Request(scope, replaying(body, receive))
        try:
            response = await create_job(await backend(request), request, spec)
        except Exception as exc:  # answered as the app's handlers answer it
            problem = from_exception(exc)
            if problem.status >= 500:
                log.warning(
                    "request failed",
                    exc_info=exc if problem.status == 500 else None,
                    extra={
                        "action": "api_request_failed",
                        "path": path,
                        "request_id": request_id(request),
                        "code": problem.code,
                    },
                )
            response = render(request, problem)
        await response(scope, receive, send)

    @staticmethod
    def _spec(scope: Scope, body: bytes) -> JobSpec | None:
        """The body as the route's model, or None when FastAPI should answer it."""
        kind = header(scope, b"content-type") or ""
        if kind.split(";", 1)[0].strip().lower() != "application/json":
            return None
        try:
            document = parsed_body(scope, body)  # parsed once, by the idempotency check
        except ValueError:
            return None
        if not isinstance(document, dict):
            return None
        try:
            return JobSpec.model_validate(document)
        except ValidationError:
            return None
