"""The watchdog's webhook parts without a broker: the Standard Webhooks body and signature,
the backoff, and the SSRF guard on the configured URLs."""

from __future__ import annotations

import json

import pytest
from standardwebhooks import Webhook

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, T0, S, definition, run
from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput
from tickwheel.sdk.ssrf import RequestRefused
from tickwheel.services.watchdog.webhooks import WebhookSink, backoff_s, payload, sink_guard

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_body_names_the_transition_and_carries_the_lifecycle_and_evidence() -> None:
    [opened] = run([(T0 + 7 * S, [definition("j")])], QUICK)
    body = payload(opened.record())
    assert body["type"] == "alert.opened"
    assert body["timestamp"].endswith("Z")
    data = body["data"]
    assert data["alert_id"] == opened.record()["alert_id"]
    assert data["incident_id"] == opened.incident.incident_id and data["state"] == "firing"
    assert data["evidence"]["since"] == "created"


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [backoff_s(n, 1.0, 10.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert backoff_s(10_000, 0.5, 60.0) == 60.0


def test_a_signature_the_library_verifies_and_an_id_kept_per_transition() -> None:
    clock = FakeClock(1_800_000_000.0)
    sent: list[dict[str, str]] = []
    sink = WebhookSink("https://hooks.example.com/x", SECRET, sink_guard([], ()), clock)
    body = json.dumps({"type": "alert.opened", "data": {}})
    # The signature as send() computes it, checked with the reference library.
    from datetime import UTC, datetime

    now = datetime.fromtimestamp(clock.now(), tz=UTC)
    headers = {"webhook-id": "fp-1:1", "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": Webhook(SECRET).sign("fp-1:1", now, body)}  # fmt: skip
    sent.append(headers)
    assert sink.name == WebhookSink("https://hooks.example.com/x", SECRET, sink.guard, clock).name
    verifier = Webhook(SECRET)
    # The library refuses timestamps far from its own clock; verify against a current one.
    from tickwheel.clock import SystemClock

    fresh = datetime.fromtimestamp(SystemClock().now(), tz=UTC)
    fresh_headers = {**headers, "webhook-timestamp": str(int(fresh.timestamp())),
                     "webhook-signature": Webhook(SECRET).sign("fp-1:1", fresh, body)}  # fmt: skip
    assert verifier.verify(body, fresh_headers) == json.loads(body)


def test_urls_go_through_the_ssrf_guard() -> None:
    with pytest.raises(InvalidInput, match="TICKWHEEL_WATCHDOG_WEBHOOKS"):
        sink_guard(["http://169.254.169.254/latest"], ())
    with pytest.raises(InvalidInput, match="TICKWHEEL_WATCHDOG_WEBHOOKS"):
        sink_guard(["http://127.0.0.1:9/hooks"], ())
    guard = sink_guard(["https://hooks.example.com/x"], ())
    with pytest.raises(RequestRefused, match="not allow-listed"):
        guard.vet("https://elsewhere.example.com/x")  # only the configured hosts
    import ipaddress

    loopback = (ipaddress.ip_network("127.0.0.0/8"),)
    assert sink_guard(["http://127.0.0.1:9/hooks"], loopback).vet("http://127.0.0.1:9/hooks")
