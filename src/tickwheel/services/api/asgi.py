"""The API's per-request layers as plain ASGI (decision 0153): `app.middleware("http")` runs the
rest of the app as a task behind a body stream for every request, 250-400 us of CPU a layer
on this machine (bench/reports/api-reads.md); a plain layer only wraps `send`.

- `RequestIds`: every response carries `X-Request-Id` (the caller's, if short printable
  text, else a new one), kept in the request's state for problems and the audit.
- `EntityTags`: a JSON 200 to a GET gets an entity tag of its body (unless the route set one,
  as a job's version is) and `If-None-Match` holding it is answered 304.
- `captured`: the app's whole answer as a `Response`, for the door's idempotent POSTs (the
  answer is recorded before it is sent).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID_HEADER = "X-Request-Id"


def header(scope: Scope, name: bytes) -> str | None:
    """A request header's value (`name` lower case), or None."""
    for key, value in scope.get("headers") or ():
        if key == name:
            return str(value.decode("latin-1"))
    return None


def new_request_id(scope: Scope) -> str:
    """The request's id, made once: the caller's when it is short printable text (it lands in
    logs), else a new one."""
    state = scope.setdefault("state", {})
    known = state.get("request_id")
    if known:
        return str(known)
    given = header(scope, b"x-request-id") or ""
    value = given if 0 < len(given) <= 128 and given.isprintable() else str(uuid.uuid4())
    state["request_id"] = value
    return value


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = new_request_id(scope)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                headers = MutableHeaders(scope=message)
                headers.setdefault(REQUEST_ID_HEADER, rid)
            await send(message)

        await self.app(scope, receive, sending)


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison: `*`, or any listed tag with the same opaque value."""
    if if_none_match.strip() == "*":
        return True
    value = etag.removeprefix("W/")
    return any(t.strip().removeprefix("W/") == value for t in if_none_match.split(","))


class EntityTags:
    """The `send` of one GET: a JSON 200's body is held to its last chunk, tagged, and sent
    whole (or as a 304); anything else passes through untouched, streams included."""

    def __init__(self, scope: Scope, send: Send) -> None:
        self.send = send
        self.wanted = header(scope, b"if-none-match")
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.status = 0
        self.headers: MutableHeaders | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            message.setdefault("headers", [])
            self.headers = MutableHeaders(scope=message)
            if self.status == 200 and (self.headers.get("content-type") or "").startswith(
                "application/json"
            ):
                self.start = message  # held until the body is whole
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._tagged(b"".join(self.chunks))
            return
        await self.send(message)

    async def _tagged(self, body: bytes) -> None:
        assert self.start is not None and self.headers is not None
        headers = self.headers
        etag = headers.get("etag") or f'W/"{hashlib.sha256(body).hexdigest()[:24]}"'
        headers["etag"] = etag
        if self.wanted is not None and _matches(self.wanted, etag):
            self.status = 304
            del headers["content-type"]
            del headers["content-length"]
            await self.send({**self.start, "status": 304})
            await self.send({"type": "http.response.body", "body": b""})
            return
        headers["content-length"] = str(len(body))
        await self.send(self.start)
        await self.send({"type": "http.response.body", "body": body})


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then whatever the client sends next
    (a disconnect)."""
    delivered = False

    async def again() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def captured(app: ASGIApp, scope: Scope, receive: Receive) -> Response:
    """Run `app` for this request and return its whole answer (status, headers, body)."""
    answer: dict[str, Any] = {"status": 500, "headers": []}
    chunks: list[bytes] = []

    async def keep(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, keep)
    response = Response(b"".join(chunks), answer["status"])
    response.raw_headers = answer["headers"]
    return response
