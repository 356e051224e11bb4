"""Rate and size limits (decision 0070): per-tenant token buckets, and a bounded request body.

Reads and writes have a bucket each per tenant, so a tenant's polling never spends its
writes, and no tenant spends another's. A refused call is a 429 problem with `Retry-After`
(whole seconds until a token is back) and the `RateLimit-Policy`/`RateLimit` headers of
draft-ietf-httpapi-ratelimit-headers. A body over `max_bytes` is a 413 before any of it reaches
a route; one over `warn_bytes` is served with a `Tickwheel-Warning` header.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from tickwheel.errors import InvalidInput
from tickwheel.services.api.asgi import replaying

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

WARN_BYTES = 256 * 1024
MAX_BYTES = 1024 * 1024


def _positive(name: str, default: float) -> float:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or math.isinf(value):
        raise InvalidInput(name, f"{text!r}; accepted: a positive number")
    return value


@dataclass(frozen=True)
class RateSettings:
    """Per tenant: TICKWHEEL_API_READS_PER_S (default 500) with a burst of
    TICKWHEEL_API_READ_BURST (1000); TICKWHEEL_API_WRITES_PER_S (200), TICKWHEEL_API_WRITE_BURST
    (400)."""

    reads_per_s: float = 500.0
    read_burst: float = 1000.0
    writes_per_s: float = 200.0
    write_burst: float = 400.0

    @classmethod
    def from_env(cls) -> RateSettings:
        return cls(
            _positive("TICKWHEEL_API_READS_PER_S", cls.reads_per_s),
            _positive("TICKWHEEL_API_READ_BURST", cls.read_burst),
            _positive("TICKWHEEL_API_WRITES_PER_S", cls.writes_per_s),
            _positive("TICKWHEEL_API_WRITE_BURST", cls.write_burst),
        )

    def of(self, kind: str) -> tuple[float, float]:
        if kind == "read":
            return self.reads_per_s, self.read_burst
        return self.writes_per_s, self.write_burst


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class TokenBuckets:
    """One bucket per (tenant, kind); `take` is told the time, so tests move it by hand."""

    settings: RateSettings = field(default_factory=RateSettings)
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, tenant: str, kind: str, now: float) -> float:
        """0 when a token was taken, else the seconds until one is available."""
        rate, burst = self.settings.of(kind)
        with self._lock:
            bucket = self._buckets.setdefault((tenant, kind), _Bucket(burst, now))
            # A clock stepped backwards refills nothing (and takes nothing away).
            bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)
            bucket.at = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / rate

    def headers(self, tenant: str, kind: str, wait: float) -> dict[str, str]:
        rate, burst = self.settings.of(kind)
        with self._lock:
            bucket = self._buckets.get((tenant, kind))
            remaining = int(bucket.tokens) if bucket else int(burst)
        window = max(1, math.ceil(burst / rate))
        headers = {
            "RateLimit-Policy": f'"{kind}";q={int(burst)};w={window}',
            "RateLimit": f'"{kind}";r={remaining};t={math.ceil(wait)}',
        }
        if wait > 0:
            headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return headers


class BodyLimit:
    """ASGI middleware: a body is read (up to `max_bytes` + one chunk) before the app sees it.
    Over the limit (by Content-Length or by what arrives) the answer is `too_large(scope)`,
    and the app never runs; the body it does get is the one that was read."""

    def __init__(
        self,
        app: ASGIApp,
        too_large: Callable[[Scope, int], Awaitable[Any]],
        max_bytes: int = MAX_BYTES,
        warn_bytes: int = WARN_BYTES,
    ) -> None:
        self.app = app
        self.too_large = too_large
        self.max_bytes = max_bytes
        self.warn_bytes = warn_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            response = await self.too_large(scope, int(declared))
            await response(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away: let the app see the disconnect
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.max_bytes:
                response = await self.too_large(scope, size)
                await response(scope, receive, send)
                return
        replay = replaying(b"".join(chunks), receive)

        if size <= self.warn_bytes:
            await self.app(scope, replay, send)
            return

        async def warn(message: Message) -> None:
            if message["type"] == "http.response.start":
                note = f"the request body is {size} bytes; above {self.warn_bytes} is discouraged"
                message["headers"] = [
                    *message.get("headers", []),
                    (b"tickwheel-warning", note.encode()),
                ]
            await send(message)

        await self.app(scope, replay, warn)
