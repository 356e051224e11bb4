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
from tickwheel.jobtypes.ssrf import SsrfGuard
from tickwheel.sdk.worker import ExecutionCancelled, ExecutionContext, RetryableError

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
