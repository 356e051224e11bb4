"""The `http` built-in job type: one HTTP request to an allow-listed host, through the SSRF
guard (`tickwheel.sdk.ssrf`), with the standard library only.

Payload: `{"url": ..., "method": "GET", "body": str | object | null, "headers": {...},
"timeout": seconds}`. A JSON object or list as `body` is sent as `application/json`.

Outcome: a 2xx response succeeds with `{"status", "body"}` (the body's first 4 KiB as text);
408, 425, 429 and 5xx are retryable failures; any other status is permanent; a refused URL
is permanent; a connection error or timeout is retryable. Redirects (301, 302, 303, 307, 308)
are followed up to five hops, each hop vetted like the first; a hop to another origin carries
only `CROSS_ORIGIN_HEADERS`. A header with a control character (CR/LF) is a permanent failure.

`timeout` bounds the whole request — every hop, the wait for the status line and headers,
and the body, however slowly any of them trickles in — not just each read; cancellation is
checked at every read, and at least every `CANCEL_CHECK_S` while the server is silent.
"""

from __future__ import annotations

import http.client
import io
import json
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

from tickwheel.sdk.ssrf import SsrfGuard, VettedTarget
from tickwheel.sdk.worker import ExecutionContext, PermanentError, RetryableError

MAX_REDIRECTS = 5
MAX_BODY_BYTES = 1024 * 1024
RESULT_BODY_CHARS = 4096
DEFAULT_TIMEOUT = 30.0
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
RETRYABLE_STATUSES = frozenset({408, 425, 429})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CANCEL_CHECK_S = 0.25  # longest a silent server can delay noticing a cancellation


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the vetted address; the Host header still names the host."""

    def __init__(self, target: VettedTarget, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to the vetted address, with SNI and certificate checks against the host name."""

    def __init__(self, target: VettedTarget, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


class _DeadlineReader(io.RawIOBase):
    """The response's bytes, read against the request's deadline. `http.client` reads the
    status line and headers with the socket's per-`recv` timeout, so a server sending a byte
    a second would hold the job for ever; here every read gets only what is left of the
    deadline, waits in short slices so a cancellation is seen, and a slice that times out is
    retried here — a timeout escaping into `http.client`'s own reader would spoil it."""

    def __init__(
        self,
        sock: socket.socket,
        deadline: float,
        clock: Callable[[], float],
        interrupt: Callable[[], None],
        expired: Callable[[], Exception],
    ) -> None:
        super().__init__()
        self._sock = sock
        # Holds the socket open as `makefile` would: `http.client` closes the connection's
        # socket once a response that ends the connection is read, before its body is.
        self._hold = sock.makefile("rb", buffering=0)
        self._deadline = deadline
        self._clock = clock
        self._interrupt = interrupt
        self._expired = expired

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._hold.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        while True:
            self._interrupt()
            left = self._deadline - self._clock()
            if left <= 0:
                raise self._expired()
            self._sock.settimeout(min(left, CANCEL_CHECK_S))
            try:
                return self._sock.recv_into(buffer)
            except TimeoutError:
                continue


class _DeadlineSocket:
    """What `HTTPResponse` is built from: it only ever calls `makefile("rb")`."""

    def __init__(self, reader: _DeadlineReader) -> None:
        self._reader = reader

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self._reader)


def _response_from(
    reader: _DeadlineReader, _sock: socket.socket, **kwargs: Any
) -> http.client.HTTPResponse:
    """`HTTPConnection.response_class`, reading through `reader` instead of the raw socket."""
    return http.client.HTTPResponse(_DeadlineSocket(reader), **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes
    url: str
    redirects: int


# Set by the client itself; a job that could set them could reach what the allow-list forbids.
FORBIDDEN_HEADERS = frozenset(
    {"host", "connection", "transfer-encoding", "content-length", "upgrade"}
)
# The only headers carried to another origin on a redirect. An allow-list, not a list of
# credentials: a job's secret can hide in any header (X-Api-Key, X-Auth-Token, ...), and
# the redirect target is whoever the first server chose.
CROSS_ORIGIN_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "content-type",
        "idempotency-key",
        "user-agent",
    }
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _check_headers(headers: dict[str, str]) -> None:
    """CR or LF in a header would split the request (a header or a request of the job's
    choosing); `http.client` refuses them with a ValueError, which must not read as a
    network failure worth retrying: the payload is wrong."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise PermanentError(
                f"http: header name {name!r} is not a token: use letters, digits and "
                "!#$%&'*+-.^_`|~ only, no spaces or control characters"
            )
        if _CONTROL.search(value):
            raise PermanentError(
                f"http: header {name!r} contains a control character (CR, LF or another below "
                "0x20) in its value; header values are one line of printable text"
            )


def _encode_body(body: Any, headers: dict[str, str]) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, dict | list):
        headers.setdefault("Content-Type", "application/json")
        return json.dumps(body).encode()
    raise PermanentError(f"body must be a string, a JSON object or list, or null; got {body!r}")


def fetch(
    guard: SsrfGuard,
    url: str,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_redirects: int = MAX_REDIRECTS,
    *,
    interrupt: Callable[[], None] = lambda: None,
    clock: Callable[[], float] = time.monotonic,
) -> HttpResponse:
    """One request, following redirects; every hop passes `guard.vet` before any connection.
    `timeout` bounds it all (`clock` tells the time); `interrupt` is called between chunks of
    the body and may raise to stop (cancellation). Raises `RequestRefused` (permanent) or
    `RetryableError` for network failures and an exhausted timeout."""
    headers = dict(headers or {})
    deadline = clock() + timeout
    for hop in range(max_redirects + 1):
        target = guard.vet(url)
        connection_type = (
            _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
        )
        connection = connection_type(target, _remaining(deadline, clock, method, url, timeout))
        try:
            connection.request(method, target.target, body=body, headers=headers)
            assert connection.sock is not None
            reader = _DeadlineReader(
                connection.sock,
                deadline,
                clock,
                interrupt,
                partial(_timed_out, method, url, timeout),
            )
            connection.response_class = partial(_response_from, reader)  # type: ignore[assignment]
            response = connection.getresponse()
            location = response.getheader("Location")
            data = _read_body(response, deadline, clock, interrupt, method, url, timeout)
            status = response.status
        except (ValueError, http.client.InvalidURL) as exc:
            # Raised by http.client for what no retry can fix: a bad header, a bad target.
            raise PermanentError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise RetryableError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        finally:
            connection.close()
        if status in REDIRECTS and location:
            if hop == max_redirects:
                raise PermanentError(f"{method} {url}: more than {max_redirects} redirects")
            previous = urlsplit(url)
            url = urljoin(url, location)
            following = urlsplit(url)
            if previous.scheme == "https" and following.scheme != "https":
                raise PermanentError(
                    f"{method} {url}: refused a redirect from https to {following.scheme}"
                )
            if _origin(previous) != _origin(following):
                # What the job said to one origin is not handed to another, bar a few
                # headers that cannot carry a secret.
                for name in list(headers):
                    if name.lower() not in CROSS_ORIGIN_HEADERS:
                        del headers[name]
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = "GET", None
                headers.pop("Content-Type", None)
            continue
        return HttpResponse(status, data, url, hop)
    raise AssertionError("unreachable")  # pragma: no cover


def _origin(url: SplitResult) -> tuple[str, str, int | None]:
    """Scheme, host and effective port: `http://a` and `http://a:80` are one origin."""
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, (url.hostname or "").lower(), url.port or default


def _timed_out(method: str, url: str, timeout: float) -> RetryableError:
    return RetryableError(f"{method} {url}: no answer within {timeout}s in all")


def _remaining(
    deadline: float, clock: Callable[[], float], method: str, url: str, timeout: float
) -> float:
    left = deadline - clock()
    if left <= 0:
        raise _timed_out(method, url, timeout)
    return left


def _read_body(
    response: http.client.HTTPResponse,
    deadline: float,
    clock: Callable[[], float],
    interrupt: Callable[[], None],
    method: str,
    url: str,
    timeout: float,
) -> bytes:
    """Up to MAX_BODY_BYTES of the body, a chunk at a time: a server that trickles it byte by
    byte cannot hold the job past its deadline, nor past a cancellation."""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_BODY_BYTES:
        _remaining(deadline, clock, method, url, timeout)
        chunk = response.read1(min(65_536, MAX_BODY_BYTES - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        interrupt()
    return b"".join(chunks)


def http_handler(ctx: ExecutionContext, guard: SsrfGuard | None = None) -> dict[str, Any]:
    """Send one HTTP request to an allow-listed host (payload: url, method, body, headers,
    timeout)."""
    payload = ctx.payload
    url = payload.get("url")
    if not isinstance(url, str) or not url:
        raise PermanentError('http: payload needs "url", e.g. {"url": "https://api.example.com/"}')
    method = str(payload.get("method", "GET")).upper()
    if method not in METHODS:
        raise PermanentError(f"http: method {method!r} is not one of {', '.join(sorted(METHODS))}")
    raw_headers = payload.get("headers") or {}
    if not isinstance(raw_headers, dict):
        raise PermanentError("http: headers must be an object of name: value")
    headers = {str(k): str(v) for k, v in raw_headers.items()}
    forbidden = sorted(k for k in headers if k.lower() in FORBIDDEN_HEADERS)
    if forbidden:
        # Host would let an allow-listed proxy be pointed at any virtual host behind it.
        raise PermanentError(f"http: header(s) {', '.join(forbidden)} may not be set by a job")
    _check_headers(headers)
    headers.setdefault("Idempotency-Key", ctx.execution_id)
    headers.setdefault("User-Agent", "tickwheel-worker")
    timeout = payload.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int | float) or not 0 < timeout <= 300:
        raise PermanentError("http: timeout must be a number of seconds in (0, 300]")
    body = _encode_body(payload.get("body"), headers)
    # A refusal (RequestRefused) is a PermanentError already: it propagates as it is.
    response = fetch(
        guard or SsrfGuard.from_env(),
        url,
        method,
        body,
        headers,
        float(timeout),
        interrupt=ctx.raise_if_cancelled,
    )
    summary = f"http: {method} {response.url} answered {response.status}"
    if response.status in RETRYABLE_STATUSES or response.status >= 500:
        raise RetryableError(summary)
    if not 200 <= response.status < 300:
        raise PermanentError(summary)
    return {
        "status": response.status,
        "url": response.url,
        "body": response.body[:RESULT_BODY_CHARS].decode("utf-8", "replace"),
    }
