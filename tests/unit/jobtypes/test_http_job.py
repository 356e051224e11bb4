"""The `http` job type against slow and hostile local servers: its timeout bounds the wait for
the status line and headers as well as the body, a cancellation is noticed while waiting,
credentials never follow a redirect to another origin, and a bad header fails permanently.

The servers are raw sockets on 127.0.0.1, in this process, reachable only because each test's
guard names them (`allowed_networks=127.0.0.1/32`)."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tickwheel.jobtypes.http import CANCEL_CHECK_S, fetch, http_handler
from tickwheel.sdk.ssrf import SsrfGuard
from tickwheel.sdk.worker import (
    ExecutionCancelled,
    ExecutionContext,
    PermanentError,
    RetryableError,
)

LOOPBACK_ONLY = (ipaddress.ip_network("127.0.0.1/32"),)


class RawServer:
    """Accepts connections on 127.0.0.1 and answers each with `respond(connection)`, in a
    thread of its own; records the request head each connection sent."""

    def __init__(self, respond: Callable[[socket.socket, bytes], None]) -> None:
        self.respond = respond
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = connection.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.requests.append(head)
            with contextlib.suppress(OSError):  # the client gave up: what some tests want
                self.respond(connection, head)

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def guard(self, *extra_hosts: str) -> SsrfGuard:
        return SsrfGuard(
            allowed_hosts=frozenset({f"127.0.0.1:{self.port}", *extra_hosts}),
            allowed_networks=LOOPBACK_ONLY,
        )


@contextlib.contextmanager
def serving(respond: Callable[[socket.socket, bytes], None]) -> Iterator[RawServer]:
    server = RawServer(respond)
    try:
        yield server
    finally:
        server.close()


def trickle_headers(connection: socket.socket, _head: bytes) -> None:
    """A status line, then header bytes one every 20 ms for ten seconds: every `recv` gets
    something, so only a deadline over the whole wait stops a client."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(500):
        connection.sendall(b"a")
        time.sleep(0.02)
    connection.sendall(b"\r\nContent-Length: 0\r\n\r\n")


def silent(connection: socket.socket, _head: bytes) -> None:
    time.sleep(10)


def context(payload: dict[str, Any]) -> ExecutionContext:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return ExecutionContext(
        execution_id="exec-1", job_id="job-1", job_type="http", tenant_id="t",
        attempt=1, scheduled_time=now, period_start=now, period_end=None, payload=payload,
    )  # fmt: skip


# -- B8: the timeout and cancellation cover the response headers -------------------------------
def test_the_timeout_bounds_a_server_that_trickles_its_headers() -> None:
    with serving(trickle_headers) as server:
        started = time.monotonic()
        with pytest.raises(RetryableError, match=r"no answer within 1\.0s in all"):
            fetch(server.guard(), server.url("/slow"), timeout=1.0)
        took = time.monotonic() - started
    assert took < 2.0, f"held for {took:.2f}s by a server that trickles its headers"


def test_the_handler_reports_a_trickled_header_timeout_as_retryable() -> None:
    with serving(trickle_headers) as server:
        started = time.monotonic()
        with pytest.raises(RetryableError):
            http_handler(context({"url": server.url(), "timeout": 0.5}), server.guard())
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("respond", [trickle_headers, silent], ids=["trickling", "silent"])
def test_a_cancellation_is_noticed_while_waiting_for_headers(
    respond: Callable[[socket.socket, bytes], None],
) -> None:
    ctx = context({})
    with serving(respond) as server:
        threading.Timer(0.3, ctx.cancel_event.set).start()
        started = time.monotonic()
        with pytest.raises(ExecutionCancelled):
            fetch(server.guard(), server.url(), timeout=30, interrupt=ctx.raise_if_cancelled)
        took = time.monotonic() - started
    assert took < 0.3 + CANCEL_CHECK_S + 0.5, f"noticed the cancellation after {took:.2f}s"


def test_a_prompt_answer_is_read_whole() -> None:
    body = b"x" * 100_000

    def answer(connection: socket.socket, _head: bytes) -> None:
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )

    with serving(answer) as server:
        response = fetch(server.guard(), server.url(), timeout=5)
    assert (response.status, response.body) == (200, body)


# -- B21: headers across origins, and headers that cannot be sent ------------------------------
def answer_ok(connection: socket.socket, _head: bytes) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def redirect_to(location: str) -> Callable[[socket.socket, bytes], None]:
    def respond(connection: socket.socket, _head: bytes) -> None:
        connection.sendall(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n" % location.encode()
        )

    return respond


def headers_of(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}


SENT = {
    "Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "Cookie": "session=1",
    "X-Tenant-Secret": "hush", "Accept": "application/json", "Accept-Language": "en",
}  # fmt: skip


def test_only_safe_headers_follow_a_redirect_to_another_origin() -> None:
    with serving(answer_ok) as other, serving(redirect_to(other.url("/landed"))) as first:
        guard = first.guard(f"127.0.0.1:{other.port}")  # another port: another origin
        payload = {"url": first.url("/start"), "method": "POST", "body": {"a": 1},
                   "headers": SENT}  # fmt: skip
        result = http_handler(context(payload), guard)
    assert result["status"] == 200 and result["url"] == other.url("/landed")
    sent_first, sent_other = headers_of(first.requests[0]), headers_of(other.requests[0])
    assert {k.lower(): v for k, v in SENT.items()}.items() <= sent_first.items()
    for secret in ("authorization", "x-api-key", "cookie", "x-tenant-secret"):
        assert secret not in sent_other, secret
    assert sent_other["accept"] == "application/json" and sent_other["accept-language"] == "en"
    assert sent_other["idempotency-key"] == "exec-1"
    assert sent_other["content-type"] == "application/json"  # a 307 keeps its body
    assert other.requests[0].startswith(b"POST /landed ")


def test_every_header_follows_a_redirect_within_the_origin() -> None:
    server = RawServer(answer_ok)
    try:
        server.respond = lambda c, h: (
            redirect_to("/landed")(c, h) if h.startswith(b"GET /start ") else answer_ok(c, h)
        )
        http_handler(context({"url": server.url("/start"), "headers": SENT}), server.guard())
    finally:
        server.close()
    first, second = (headers_of(head) for head in server.requests)
    assert {k.lower(): v for k, v in SENT.items()}.items() <= second.items()
    assert first["x-api-key"] == second["x-api-key"] == "k3y"


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Api-Key": "k3y\r\nX-Injected: yes"},
        {"X-Note": "line one\nline two"},
        {"X-Nul": "a\x00b"},
        {"Bad Name": "v"},
        {"X-Split\r\nInjected": "v"},
    ],
    ids=["crlf-value", "lf-value", "nul-value", "space-in-name", "crlf-in-name"],
)
def test_a_header_that_cannot_be_sent_fails_permanently_before_connecting(
    headers: dict[str, str],
) -> None:
    with serving(answer_ok) as server:
        with pytest.raises(PermanentError, match="http: header"):
            http_handler(context({"url": server.url(), "headers": headers}), server.guard())
        assert server.requests == []


def test_http_client_refusing_a_header_is_permanent_not_retryable() -> None:
    # Past the handler's own check (e.g. a caller of fetch): http.client's ValueError.
    with serving(answer_ok) as server:
        with pytest.raises(PermanentError, match="ValueError"):
            fetch(server.guard(), server.url(), headers={"X-Bad": "a\r\nb"}, timeout=5)
        assert server.requests == []
