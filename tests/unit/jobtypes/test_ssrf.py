"""The SSRF guard of the `http` job type: allow-listed hosts only, and never a private,
loopback, link-local, metadata or otherwise non-public address — checked after DNS resolution,
on every redirect hop, connecting to the vetted address without resolving again.

A local http.server on 127.0.0.1 plays the target; it is reachable only because these tests
build guards whose allow-lists name it (`allowed_networks=127.0.0.1/32`).
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tickwheel.jobtypes.http import fetch, http_handler
from tickwheel.sdk.ssrf import (
    ALLOWED_HOSTS_ENV,
    ALLOWED_NETWORKS_ENV,
    RequestRefused,
    SsrfGuard,
    address_problem,
    legacy_ipv4,
)
from tickwheel.sdk.worker import ExecutionContext, PermanentError, RetryableError

LOOPBACK_ONLY = (ipaddress.ip_network("127.0.0.1/32"),)


def resolver_of(table: dict[str, list[str]]) -> Any:
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return table[host]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def refusal(guard: SsrfGuard, url: str) -> str:
    with pytest.raises(RequestRefused) as info:
        guard.vet(url)
    assert isinstance(info.value, PermanentError)  # a refusal is never retried
    return info.value.reason


# -- the cases of the issue, each refused even when its host is allow-listed ---------------------
EVERYTHING_LISTED = frozenset(
    {"127.0.0.1", "169.254.169.254", "[::1]", "::1", "0x7f000001", "2130706433", "0177.0.0.1",
     "127.1", "internal.example", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "[fd00:ec2::254]",
     "fd00:ec2::254", "[::ffff:a9fe:a9fe]", "::ffff:a9fe:a9fe", "0.0.0.0", "mixed.example",
     "cgnat.example", "[64:ff9b::7f00:1]", "64:ff9b::7f00:1", "224.0.0.1", "10.0.0.1",
     "[2002:7f00:1::]", "2002:7f00:1::"}
)  # fmt: skip
GUARD = SsrfGuard(
    allowed_hosts=EVERYTHING_LISTED,
    resolver=resolver_of(
        {
            "internal.example": ["10.1.2.3"],
            "mixed.example": ["93.184.216.34", "192.168.1.10"],
            "cgnat.example": ["100.64.0.7"],
        }
    ),
)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[::1]/", "loopback"),
        ("http://0x7f000001/", "numeric spelling of 127.0.0.1"),
        ("http://2130706433/", "numeric spelling of 127.0.0.1"),
        ("http://0177.0.0.1/", "numeric spelling of 127.0.0.1"),
        ("http://127.1/", "numeric spelling of 127.0.0.1"),
        ("http://internal.example/", "10.1.2.3 is a private address"),
        ("http://mixed.example/", "192.168.1.10 is a private address"),
        ("http://cgnat.example/", "not a globally routable"),
        ("http://[::ffff:127.0.0.1]/", "embeds 127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "metadata"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://[64:ff9b::7f00:1]/", "embeds 127.0.0.1"),
        ("http://[2002:7f00:1::]/", "embeds 127.0.0.1"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://10.0.0.1/", "private"),
    ],
)
def test_non_public_addresses_are_refused_even_when_allow_listed(url: str, why: str) -> None:
    assert why in refusal(GUARD, url)


@pytest.mark.parametrize(
    "url",
    ["http://example.com/", "http://127.0.0.1/", "https://evil.example.com@127.0.0.1/"],
)
def test_hosts_that_are_not_allow_listed_are_refused(url: str) -> None:
    guard = SsrfGuard(allowed_hosts=frozenset({"api.example.com"}))
    reason = refusal(guard, url)
    assert "not allow-listed" in reason or "credentials" in reason


def test_scheme_and_credentials_are_checked() -> None:
    guard = SsrfGuard(allowed_hosts=frozenset({"api.example.com"}))
    assert "scheme" in refusal(guard, "file:///etc/passwd")
    assert "scheme" in refusal(guard, "gopher://api.example.com/")
    assert "credentials" in refusal(guard, "http://user:pw@api.example.com/")


def test_a_public_address_passes_and_names_the_address_to_connect_to() -> None:
    resolve = resolver_of({"api.example.com": ["93.184.216.34"]})
    guard = SsrfGuard(allowed_hosts=frozenset({"api.example.com"}), resolver=resolve)
    target = guard.vet("https://api.example.com/v1/things?x=1")
    assert (target.host, target.port, target.address) == ("api.example.com", 443, "93.184.216.34")
    assert target.target == "/v1/things?x=1"
    assert resolve.calls == ["api.example.com"]


def test_allow_list_patterns_and_ports() -> None:
    resolve = resolver_of({h: ["93.184.216.34"] for h in ("a.example.com", "example.com", "x.org")})
    guard = SsrfGuard(allowed_hosts=frozenset({"*.example.com", "x.org:8443"}), resolver=resolve)
    guard.vet("http://a.example.com/")
    assert "not allow-listed" in refusal(
        guard, "http://example.com/"
    )  # the apex is not a subdomain
    guard.vet("https://x.org:8443/")
    assert "not allow-listed" in refusal(guard, "https://x.org/")


def test_allowed_networks_open_private_ranges_but_never_metadata() -> None:
    guard = SsrfGuard(
        allowed_hosts=frozenset({"10.20.0.5", "169.254.169.254"}),
        allowed_networks=(
            ipaddress.ip_network("10.20.0.0/16"),
            ipaddress.ip_network("169.254.0.0/16"),
        ),
    )
    assert guard.vet("http://10.20.0.5/").address == "10.20.0.5"
    assert "metadata" in refusal(guard, "http://169.254.169.254/")


def test_settings_come_from_the_environment() -> None:
    guard = SsrfGuard.from_env(
        {ALLOWED_HOSTS_ENV: "api.example.com, *.svc.example", ALLOWED_NETWORKS_ENV: "10.0.0.0/8"}
    )
    assert guard.allowed_hosts == frozenset({"api.example.com", "*.svc.example"})
    assert guard.allowed_networks == (ipaddress.ip_network("10.0.0.0/8"),)
    assert SsrfGuard.from_env({}).allowed_hosts == frozenset()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0x7f000001", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("10.0.258", "10.0.1.2"),
        ("api.example.com", None),
        ("4294967296", None),
        ("1e3", None),
    ],
)
def test_legacy_numeric_spellings(text: str, expected: str | None) -> None:
    parsed = legacy_ipv4(text)
    assert (str(parsed) if parsed else None) == expected


def test_public_addresses_have_no_problem() -> None:
    for text in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"):
        assert address_problem(ipaddress.ip_address(text)) is None


# -- against a real local server ----------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    seen: list[tuple[str, str, str | None, bytes]]
    authorization: list[str | None]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, self.headers.get("Host"), body))
        self.server.authorization.append(self.headers.get("Authorization"))
        port = self.server.server_address[1]
        redirects = {
            "/to-private": "http://internal.example/",
            "/to-metadata": "http://169.254.169.254/latest/meta-data/",
            "/to-loopback": f"http://127.0.0.2:{port}/ok",
            "/to-ok": "/ok",
            "/to-other-origin": f"http://target.test:{port}/ok",
        }
        if self.path == "/drip":
            self._drip()
            return
        if self.path in redirects:
            self.send_response(302)
            self.send_header("Location", redirects[self.path])
            self.end_headers()
            return
        status = {"/ok": 200, "/missing": 404, "/broken": 503}.get(self.path, 404)
        payload = json.dumps({"path": self.path, "body": body.decode()}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _drip(self) -> None:
        """A body of 200 bytes sent one byte at a time: every read gets something, so only an
        overall deadline (or a cancellation) stops a client that waits for all of it."""
        self.send_response(200)
        self.send_header("Content-Length", "200")
        self.end_headers()
        try:
            for _ in range(200):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.005)
        except OSError:
            pass  # the client gave up: what the tests want

    do_GET = do_POST = _answer


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.seen = []
    httpd.authorization = []
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def _guard_for(server: _Server, **resolve: list[str]) -> SsrfGuard:
    port = server.server_address[1]
    return SsrfGuard(
        allowed_hosts=frozenset(
            {f"127.0.0.1:{port}", "internal.example", "169.254.169.254", f"127.0.0.2:{port}",
             f"target.test:{port}"}
        ),
        allowed_networks=LOOPBACK_ONLY,
        resolver=resolver_of({"internal.example": ["10.9.8.7"], **resolve}),
    )  # fmt: skip


def _context(payload: dict[str, Any], attempt: int = 1) -> ExecutionContext:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return ExecutionContext(
        execution_id="exec-1", job_id="job-1", job_type="http", tenant_id="t",
        attempt=attempt, scheduled_time=now, period_start=now, period_end=None, payload=payload,
    )  # fmt: skip


def test_an_allow_listed_target_is_called(server: _Server) -> None:
    port = server.server_address[1]
    result = http_handler(
        _context({"url": f"http://127.0.0.1:{port}/ok", "method": "POST", "body": {"a": 1}}),
        _guard_for(server),
    )
    assert result["status"] == 200
    assert json.loads(result["body"]) == {"path": "/ok", "body": '{"a": 1}'}
    assert server.seen == [("POST", "/ok", f"127.0.0.1:{port}", b'{"a": 1}')]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/to-private", "10.9.8.7 is a private address"),
        ("/to-metadata", "metadata"),
        ("/to-loopback", "127.0.0.2 is a loopback address"),
    ],
)
def test_a_redirect_to_a_refused_address_is_not_followed(
    server: _Server, path: str, why: str
) -> None:
    port = server.server_address[1]
    with pytest.raises(RequestRefused) as info:
        http_handler(_context({"url": f"http://127.0.0.1:{port}{path}"}), _guard_for(server))
    assert why in str(info.value)
    assert [seen[1] for seen in server.seen] == [path]  # the refused hop was never contacted


def test_a_permitted_redirect_is_followed(server: _Server) -> None:
    port = server.server_address[1]
    response = fetch(_guard_for(server), f"http://127.0.0.1:{port}/to-ok")
    assert (response.status, response.redirects) == (200, 1)
    assert [seen[1] for seen in server.seen] == ["/to-ok", "/ok"]


def test_the_vetted_address_is_used_without_resolving_again(server: _Server) -> None:
    port = server.server_address[1]
    guard = _guard_for(server, **{"target.test": ["127.0.0.1"]})
    response = fetch(guard, f"http://target.test:{port}/ok")
    assert response.status == 200
    assert guard.resolver.calls == ["target.test"]  # type: ignore[attr-defined]
    assert server.seen[0][2] == f"target.test:{port}"  # the Host header still names the host


def test_status_codes_classify_the_failure(server: _Server) -> None:
    port = server.server_address[1]
    guard = _guard_for(server)
    with pytest.raises(PermanentError, match="answered 404"):
        http_handler(_context({"url": f"http://127.0.0.1:{port}/missing"}), guard)
    with pytest.raises(RetryableError, match="answered 503"):
        http_handler(_context({"url": f"http://127.0.0.1:{port}/broken"}), guard)


def test_a_bad_payload_is_a_permanent_failure() -> None:
    guard = SsrfGuard()
    with pytest.raises(PermanentError, match="url"):
        http_handler(_context({}), guard)
    with pytest.raises(PermanentError, match="method"):
        http_handler(_context({"url": "http://x/", "method": "TRACE"}), guard)


def test_a_connection_failure_is_retryable() -> None:
    guard = SsrfGuard(allowed_hosts=frozenset({"127.0.0.1:9"}), allowed_networks=LOOPBACK_ONLY)
    with pytest.raises(RetryableError):
        fetch(guard, "http://127.0.0.1:9/", timeout=2)


def test_a_job_may_not_set_the_host_header(server: _Server) -> None:
    port = server.server_address[1]
    payload = {"url": f"http://127.0.0.1:{port}/ok", "headers": {"Host": "internal.example"}}
    with pytest.raises(PermanentError, match="may not be set by a job"):
        http_handler(_context(payload), _guard_for(server))
    assert server.seen == []


def test_credentials_are_not_carried_to_another_origin(server: _Server) -> None:
    port = server.server_address[1]
    guard = _guard_for(server, **{"target.test": ["127.0.0.1"]})
    same = {"url": f"http://127.0.0.1:{port}/to-ok", "headers": {"Authorization": "Bearer s3cret"}}
    http_handler(_context(same), guard)
    other = {**same, "url": f"http://127.0.0.1:{port}/to-other-origin"}
    http_handler(_context(other), guard)
    # Same origin: kept on both hops; another origin: dropped on the second hop.
    assert server.authorization == ["Bearer s3cret", "Bearer s3cret", "Bearer s3cret", None]


class _Ticking:
    """A fake clock: each look at it moves it on by `step` seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_timeout_bounds_the_whole_request_not_each_read(server: _Server) -> None:
    port = server.server_address[1]
    clock = _Ticking(step=1.0)  # every chunk read "takes" a second
    with pytest.raises(RetryableError) as info:
        fetch(_guard_for(server), f"http://127.0.0.1:{port}/drip", timeout=5.0, clock=clock)
    assert "within 5.0s in all" in str(info.value)
    assert clock.now <= 7.0, "it stopped at the deadline, not at the end of the body"


def test_a_cancellation_stops_reading_the_body(server: _Server) -> None:
    port = server.server_address[1]
    chunks = []

    class Cancelled(Exception):
        pass

    def interrupt() -> None:
        chunks.append(1)
        if len(chunks) == 3:
            raise Cancelled

    with pytest.raises(Cancelled):
        fetch(_guard_for(server), f"http://127.0.0.1:{port}/drip", interrupt=interrupt)
    assert len(chunks) == 3
