"""`Idempotency-Key` on every POST, with Stripe's semantics (decision 0069).

The first request with a key runs; its answer (status, body, the headers worth replaying) is
recorded on `api.idempotency` before it is sent, keyed by tenant and key. A retry with the same
key and the same request (method, path without `/v1`, canonical JSON body) gets the recorded
answer again, marked `Idempotent-Replayed: true`; with another request it is a 422; while the
first is still running it is a 409. Records are honoured for `WINDOW_MS` (24 h).

Kept when a 2xx or a 4xx was answered (the request was judged); not kept for a 5xx, a 429
or 401/403 (nothing was judged: a retry should be judged afresh).

With the single writer running, a keyed create's record is written by the judge in the
transaction that creates the job (decision 0126): effect and record commit together, and this
store only holds the answer (`request.state.idempotency_recorded`). Otherwise, and for every
other POST, the record is published here after the route answered. A crash between a create's
effect and a record published here still cannot duplicate the job: a keyed create without a
`jobId` gets one derived from the tenant and the key (`derived_job_id`), so the retry finds
the job it made and answers with it (routes_jobs).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from tickwheel.services.api.problems import Problem

if TYPE_CHECKING:
    from tickwheel.records import IdempotencyRecord
    from tickwheel.services.api.keys import Principal
    from tickwheel.services.api.topic_view import TopicView

log = logging.getLogger("tickwheel.api")

HEADER = "Idempotency-Key"
WINDOW_MS = 24 * 3600 * 1000
MAX_KEY_CHARS = 255
REPLAYED_HEADERS = ("content-type", "location", "etag", "link")
NOT_KEPT = {401, 403, 409, 413, 429}
# Answers the judge recorded, held here until the view has read them back (every 2 s).
HELD_ANSWERS = 10_000
_JOB_NAMESPACE = uuid.UUID("6c1f7a52-9a8e-4f5e-b1a4-2d8f0e3c9b71")
_COMMAND_NAMESPACE = uuid.UUID("0b7d3f4e-51c2-4a8e-9d6b-3e2f1a7c8d90")


def derived_job_id(tenant_id: str, key: str) -> str:
    """The job id of a keyed create that names none: the same for every retry."""
    return f"job-{uuid.uuid5(_JOB_NAMESPACE, tenant_id + chr(31) + key)}"


def derived_command_id(slot: str) -> str:
    """The timer command of a keyed request (`tenant/key`): the same for every retry, so a
    backfill retried after the API lost its answer (a crash between the publish and the
    record) names the same executions again (decision 0121) instead of running them twice."""
    return str(uuid.uuid5(_COMMAND_NAMESPACE, slot))


def canonical_path(path: str) -> str:
    return path.removeprefix("/v1") or "/"


# Where a POST's body, parsed once here, waits for the next reader of the same request
# (`parsed_body`: `FastCreates` validates a create from it instead of parsing it again).
PARSED_BODY = "tickwheel.parsed_body"
_NOT_JSON = object()


def _parsed(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _NOT_JSON


def parsed_body(scope: Any, body: bytes) -> Any:
    """The JSON document of `body`, as this request's idempotency check parsed it when it did
    (else parsed now); a body that is not JSON raises ValueError, as `json.loads` does."""
    held = scope.get(PARSED_BODY)
    document = held[1] if held is not None and held[0] == body else _parsed(body)
    if document is _NOT_JSON:
        raise ValueError("not JSON")
    return document


def fingerprint(method: str, path: str, body: bytes, document: Any = None) -> str:
    """The request's identity: method, path without `/v1`, and the body as canonical JSON
    (`document`, when the caller parsed it already)."""
    document = _parsed(body) if document is None else document
    if document is _NOT_JSON:
        canonical = body
    else:
        canonical = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256()
    for part in (method.encode(), canonical_path(path).encode(), canonical):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def _body_key(path: str, document: Any) -> str | None:
    """The body's `idempotencyKey` on `POST /jobs` (seed 000): the same thing as the header."""
    if canonical_path(path) != "/jobs":
        return None
    value = document.get("idempotencyKey") if isinstance(document, dict) else None
    return value if isinstance(value, str) and value else None


def _invalid(detail: str, pointer: str | None = None) -> Problem:
    entry: dict[str, Any] = {"detail": detail}
    if pointer is None:
        entry.update(parameter=HEADER, **{"in": "header"})
    else:
        entry["pointer"] = pointer
    return Problem(422, "validation-error", f"{HEADER}: {detail}", errors=[entry])


class IdempotencyStore:
    """The recorded answers, from `api.idempotency` (a `TopicView`), and the keys in flight."""

    def __init__(self, view: TopicView[IdempotencyRecord], now_ms: Callable[[], int]) -> None:
        self.view = view
        self.now_ms = now_ms
        self._in_flight: set[str] = set()
        self._held: OrderedDict[str, IdempotencyRecord] = OrderedDict()

    def recorded(self, slot: str) -> IdempotencyRecord | None:
        held = self._held.get(slot)
        return held if held is not None else self.view.get(slot)

    async def handle(
        self,
        request: Request,
        principal: Principal,
        call_next: Callable[[Request], Awaitable[Response]],
    ) -> tuple[Response, bool]:
        """The response to a POST, and whether it was a replay."""
        body = await request.body()
        document = _parsed(body)  # once, for the key, the fingerprint and the route
        request.scope[PARSED_BODY] = (body, document)
        header = request.headers.get(HEADER)
        in_body = _body_key(request.url.path, document)
        if header is not None and in_body is not None and header != in_body:
            raise _invalid(
                "differs from the body's idempotencyKey; accepted: the same key, "
                "or only one of them",
                pointer="/idempotencyKey",
            )
        key = header if header is not None else in_body
        if key is None:
            return await call_next(request), False
        if not 0 < len(key) <= MAX_KEY_CHARS or not key.isprintable():
            raise _invalid(f"accepted: 1 to {MAX_KEY_CHARS} printable characters")
        request.state.idempotency_key = key
        slot = f"{principal.tenant_id}/{key}"
        wanted = fingerprint(request.method, request.url.path, body, document)
        # For the route: a keyed create hands both to the judge, which records the answer.
        request.state.idempotency_slot, request.state.idempotency_fingerprint = slot, wanted
        recorded = self.recorded(slot)
        if recorded is not None and self.now_ms() - recorded["created_at"] < WINDOW_MS:
            if recorded["fingerprint"] != wanted:
                raise Problem(
                    422,
                    "idempotency-key-reused",
                    f"{HEADER} {key!r} was used for another request; accepted: the same "
                    "method, path and body as its first use, or a new key",
                    errors=[{"parameter": HEADER, "in": "header", "detail": "reused"}],
                )
            headers = {**json.loads(recorded["headers"]), "Idempotent-Replayed": "true"}
            return Response(recorded["body"], recorded["status"], headers=headers), True
        if slot in self._in_flight:
            raise Problem(
                409,
                "idempotency-key-in-use",
                f"a request with {HEADER} {key!r} is still being answered; retry it",
                headers={"Retry-After": "1"},
            )
        self._in_flight.add(slot)
        try:
            response = await call_next(request)
            if response.status_code >= 500 or response.status_code in NOT_KEPT:
                return response, False
            content = bytes(response.body)  # the whole answer (`asgi.captured`)
            kept = {k: v for k, v in response.headers.items() if k in REPLAYED_HEADERS}
            record: IdempotencyRecord = {
                "tenant_id": principal.tenant_id,
                "idempotency_key": key,
                "fingerprint": wanted,
                "status": response.status_code,
                "body": content.decode(errors="replace"),
                "headers": json.dumps(kept),
                "created_at": self.now_ms(),
                "request_id": response.headers.get("x-request-id", ""),
            }
            if getattr(request.state, "idempotency_recorded", False):
                # Written by the judge with the job, in one transaction: only hold it.
                self._held[slot] = record
                while len(self._held) > HELD_ANSWERS:
                    self._held.popitem(last=False)
                return response, False  # sent as the route made it (`asgi.captured`)
            try:
                await run_in_threadpool(self.view.publish, slot, record)
            except Exception as exc:
                # The effect happened: answer it. A retry then runs again, and a create finds
                # the job its derived id made (see the module docstring).
                log.warning(
                    "idempotency record not written",
                    extra={"action": "idempotency_record_failed", "key": key, "error": str(exc)},
                )
            return response, False  # sent as the route made it (`asgi.captured`)
        finally:
            self._in_flight.discard(slot)
