"""Who may call what: keys, tenants, scopes, rate limits, idempotency, audit (decisions
0068-0070). Every call to the API's resources passes here before any route runs.

- `Authorization: Bearer tw_...` names a key (decision 0068); none or a bad one is a 401, a key
  without the scope is a 403 (`read` for GET, `admin` for dead-letter changes, `approve` for
  approval decisions, `write` for the other changes).
- The principal's tenant is what the routes act for (`request.state.principal`).
- Then the tenant's rate limit (429), then a POST's idempotency key (replay, 422, 409).
- Every change (POST, PATCH, DELETE) answered is sent to `api.audit`: tenant, key, method,
  path, status, request id, idempotency key.

`TICKWHEEL_API_AUTH=off` is the development mode: no keys, every call acts for the tenant
`default` with every scope. The service refuses it unless it listens on loopback.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickwheel.errors import InvalidInput
from tickwheel.services.api.asgi import EntityTags, captured, header, replaying
from tickwheel.services.api.idempotency import IdempotencyStore
from tickwheel.services.api.keys import DEFAULT_TENANT, SCOPES, KeyRing, Principal, granted
from tickwheel.services.api.limits import MAX_BYTES, BodyLimit, RateSettings, TokenBuckets
from tickwheel.services.api.problems import Problem, render

log = logging.getLogger("tickwheel.api")

# The API's resources; health, metrics, the docs and whatever else is mounted pass freely.
GUARDED = re.compile(
    r"^(/v1)?/(jobs|job-commands|schedules|executions|runs|workflows|approvals|alerts"
    r"|dead-letters|history)(/|$)"
)
CHANGES = ("POST", "PATCH", "PUT", "DELETE")
DEV_PRINCIPAL = Principal(DEFAULT_TENANT, None, granted(SCOPES))


def needed_scope(method: str, path: str) -> str:
    if method in ("GET", "HEAD", "OPTIONS"):
        return "read"
    if "/dead-letters" in path or "/history" in path:
        return "admin"
    if path.startswith(("/approvals", "/v1/approvals")):
        return "approve"
    return "write"


def auth_mode(environ: dict[str, str] | None = None) -> str:
    value = (environ if environ is not None else os.environ).get("TICKWHEEL_API_AUTH", "keys")
    if value not in ("keys", "off"):
        raise InvalidInput("TICKWHEEL_API_AUTH", f"{value!r}; accepted: keys (default), off")
    return value


# No call waits for its audit event, so the producer holds them 100 ms and sends what came
# meanwhile as one request: at 400 creates/s, one produce every 100 ms instead of one every
# 5 ms (librdkafka's linger), broker CPU the creates lack (decision 0173).
AUDIT_LINGER_MS = 100


class AuditTrail:
    """Sends one `ApiAuditEvent` per change; delivery is confirmed in the background (a
    failure is logged), so an audited call waits for no broker round trip."""

    def __init__(self, bootstrap: str | None) -> None:
        self.bootstrap = bootstrap
        self._producer: Any = None

    def record(self, event: dict[str, Any]) -> None:
        from tickwheel.adapters.avro import encode
        from tickwheel.adapters.kafka.producer import EventProducer
        from tickwheel.topology import topic_name

        if self._producer is None:
            self._producer = EventProducer(self.bootstrap, **{"linger.ms": AUDIT_LINGER_MS})
        self._producer.send(
            topic_name("api.audit"), event["tenant_id"], encode("ApiAuditEvent", event)
        )

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5.0)


@dataclass
class Door:
    """What the door consults. `keys` None is the development mode (no keys asked)."""

    keys: KeyRing | None
    idempotency: IdempotencyStore
    buckets: TokenBuckets = field(default_factory=TokenBuckets)
    audit: AuditTrail | None = None
    max_body_bytes: int = MAX_BYTES

    @classmethod
    def open(
        cls,
        bootstrap: str | None,
        now: Callable[[], float],
        *,
        mode: str | None = None,
        rates: RateSettings | None = None,
    ) -> Door:
        """The door over the cluster's `api.keys` and `api.idempotency` (read to their end)."""
        from tickwheel.records import IdempotencyRecord
        from tickwheel.services.api.keys import open_key_view
        from tickwheel.services.api.topic_view import TopicView

        keys = None
        if (mode or auth_mode()) == "keys":
            keys = KeyRing(open_key_view(bootstrap).start(), now)
        view = TopicView("api.idempotency", IdempotencyRecord, bootstrap).start()
        return cls(
            keys=keys,
            idempotency=IdempotencyStore(view, lambda: int(now() * 1000)),
            buckets=TokenBuckets(rates or RateSettings.from_env()),
            audit=AuditTrail(bootstrap),
        )

    def close(self) -> None:
        """Stop following the topics; deliver the audit events still queued."""
        if self.keys is not None:
            self.keys.view.close()
        self.idempotency.view.close()
        if self.audit is not None:
            self.audit.close()

    def authenticate(self, request: Request) -> Principal:
        if self.keys is None:
            return DEV_PRINCIPAL
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        principal = self.keys.authenticate(token.strip()) if scheme.lower() == "bearer" else None
        if principal is None:
            raise Problem(
                401,
                "unauthenticated",
                "no valid API key; accepted: Authorization: Bearer tw_... with an "
                "active key (tickwheel api-keys create)",
                headers={"WWW-Authenticate": 'Bearer realm="tickwheel"'},
            )
        return principal


def _audit(
    door: Door,
    request: Request,
    principal: Principal,
    status: int,
    replayed: bool,
    request_id: str,
    now_ms: int,
) -> None:
    if door.audit is None:
        return
    try:
        door.audit.record(
            {
                "audit_id": str(uuid.uuid4()),
                "event_time": now_ms,
                "tenant_id": principal.tenant_id,
                "key_id": principal.key_id,
                "method": request.method,
                "path": request.url.path,
                "status": status,
                "request_id": request_id,
                "idempotency_key": getattr(request.state, "idempotency_key", None),
                "replayed": replayed,
            }
        )
    except Exception as exc:
        log.warning("audit event not sent", extra={"action": "api_audit_failed", "error": str(exc)})


class DoorGuard:
    """The door as plain ASGI (decision 0153): key, scope, rate limit, then a POST's
    idempotency, a GET's entity tag, and a change's audit event. Paths it does not guard pass
    straight through."""

    def __init__(self, app: ASGIApp, door: Door, now: Callable[[], float]) -> None:
        self.app, self.door, self.now = app, door, now

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not GUARDED.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        door, method = self.door, scope["method"]
        request = Request(scope, receive)
        answered: dict[str, Any] = {"status": 500, "request_id": ""}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                answered["status"] = message["status"]
                answered["request_id"] = (
                    header({"headers": message.get("headers")}, b"x-request-id") or ""
                )
            await send(message)

        replayed = False
        try:
            principal = door.authenticate(request)
            request.state.principal = principal
            needed = needed_scope(method, scope["path"])
            if not principal.can(needed):
                raise Problem(
                    403,
                    "forbidden",
                    f"this key lacks the {needed!r} scope; accepted: a key with it "
                    f"(this one has {sorted(principal.scopes)})",
                )
            kind = "read" if needed == "read" else "write"
            wait = door.buckets.take(principal.tenant_id, kind, self.now())
            if wait > 0:
                raise Problem(
                    429,
                    "rate-limited",
                    f"tenant {principal.tenant_id!r} is over its {kind} rate; retry "
                    "after Retry-After seconds",
                    headers=door.buckets.headers(principal.tenant_id, kind, wait),
                )
            if method == "POST":

                async def call_next(inner: Request) -> Response:
                    return await captured(self.app, scope, replaying(await inner.body(), receive))

                response, replayed = await door.idempotency.handle(request, principal, call_next)
                await response(scope, receive, sending)
            elif method == "GET":
                await self.app(scope, receive, EntityTags(scope, sending))
            else:
                await self.app(scope, receive, sending)
        except Problem as problem:
            await render(request, problem)(scope, receive, sending)
        who: Principal | None = getattr(request.state, "principal", None)
        if method in CHANGES and who is not None:
            _audit(
                door,
                request,
                who,
                answered["status"],
                replayed,
                answered["request_id"],
                int(self.now() * 1000),
            )


def install_door(app: FastAPI, door: Door, now: Callable[[], float]) -> None:
    """The door's middleware on `app` (outermost: it runs before every route and handler)."""
    app.state.door = door

    app.add_middleware(DoorGuard, door=door, now=now)

    async def too_large(scope: Any, size: int) -> Response:
        problem = Problem(
            413,
            "payload-too-large",
            f"the request body is {size} bytes; accepted: at most {door.max_body_bytes}",
        )
        return render(Request(scope), problem)

    # Added last, so outermost: a body over the limit is refused before anything reads it.
    app.add_middleware(BodyLimit, too_large=too_large, max_bytes=door.max_body_bytes)
