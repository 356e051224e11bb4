"""Signed webhook delivery, following the Standard Webhooks spec, shared by the services that
tell people things: the watchdog's alert transitions (decision 0074) and the orchestrator's
approval notices (decision 0132). A sink signs each body with its secret and POSTs it once;
the caller owns ordering, retries (`backoff_s`) and the idempotent `webhook-id`.

URLs pass the `http` job type's SSRF guard (`tickwheel.sdk.ssrf`): the operator's URL
names its own host, and every address it resolves to must be public unless the service's
allowed-networks setting opens a private range. No redirects are followed: a receiver that
moved is a configuration to fix, not a hop to take.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlsplit

from standardwebhooks import Webhook

from tickwheel.clock import Clock
from tickwheel.core.targets import IPNetwork, url_problem
from tickwheel.errors import InvalidInput
from tickwheel.jobtypes.http import fetch
from tickwheel.sdk.ssrf import SsrfGuard
from tickwheel.sdk.worker import PermanentError, RetryableError

Outcome = Literal["delivered", "retry", "rejected"]
# 4xx a receiver may answer for a moment (timeout, conflict, too early, rate limit): retried.
RETRYABLE_CLIENT_ERRORS = frozenset({408, 409, 425, 429})
TIMEOUT_S = 10.0


def backoff_s(attempt: int, first_s: float, cap_s: float) -> float:
    """The wait before retry `attempt` (1-based): doubling from `first_s`, at most `cap_s`."""
    return float(min(cap_s, first_s * 2 ** min(attempt - 1, 30)))


def sink_guard(
    urls: list[str],
    allowed_networks: tuple[IPNetwork, ...],
    variable: str = "TICKWHEEL_WATCHDOG_WEBHOOKS",
) -> SsrfGuard:
    """The guard for the configured URLs: their own hosts allowed, addresses still vetted.
    A URL refused by its text alone is refused at start-up, naming it and `variable`."""
    hosts = set()
    for url in urls:
        problem = url_problem(url, allowed_networks)
        if problem is not None:
            raise InvalidInput(variable, problem)
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = (parts.hostname or "").lower()
        hosts.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return SsrfGuard(frozenset(hosts), allowed_networks)


@dataclass
class WebhookSink:
    """One receiver: signs each body and POSTs it."""

    url: str
    secret: str
    guard: SsrfGuard
    clock: Clock

    def __post_init__(self) -> None:
        self._signer = Webhook(self.secret)

    @property
    def name(self) -> str:
        return hashlib.sha256(self.url.encode()).hexdigest()[:12]

    def send(self, webhook_id: str, body: str) -> tuple[Outcome, str]:
        """One attempt; the signature's timestamp is this attempt's (the spec's replay guard)."""
        now = datetime.fromtimestamp(self.clock.now(), tz=UTC)
        headers = {
            "Content-Type": "application/json",
            "webhook-id": webhook_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._signer.sign(webhook_id, now, body),
        }
        try:
            response = fetch(
                self.guard, self.url, "POST", body.encode(), headers, TIMEOUT_S, max_redirects=0
            )
        except RetryableError as exc:
            return "retry", str(exc)
        except PermanentError as exc:  # the guard refused the address: a setting to change
            return "retry", str(exc)
        if 200 <= response.status < 300:
            return "delivered", str(response.status)
        if 400 <= response.status < 500 and response.status not in RETRYABLE_CLIENT_ERRORS:
            return "rejected", str(response.status)
        return "retry", str(response.status)


def allowed_networks(variable: str, text: str) -> tuple[IPNetwork, ...]:
    """`text` (comma-separated CIDRs, from `variable`) as networks a receiver may be in
    besides public addresses; a bad entry is refused with one line naming `variable`."""
    entries = [n.strip() for n in text.split(",") if n.strip()]
    try:
        return tuple(ipaddress.ip_network(n, strict=False) for n in entries)
    except ValueError as exc:
        raise InvalidInput(variable, f"{exc}; accepted: CIDRs, e.g. 10.20.0.0/16") from None


# The watchdog's alert sinks, as the environment configures them: read by the watchdog, which
# delivers to them, and by the console, which lists and tests them (one reading of each).
ALERT_WEBHOOKS_VAR = "TICKWHEEL_WATCHDOG_WEBHOOKS"
ALERT_WEBHOOK_SECRET_VAR = "TICKWHEEL_WATCHDOG_WEBHOOK_SECRET"
ALERT_WEBHOOK_NETWORKS_VAR = "TICKWHEEL_WATCHDOG_WEBHOOK_ALLOWED_NETWORKS"


def alert_webhook_urls() -> list[str]:
    return [u.strip() for u in os.environ.get(ALERT_WEBHOOKS_VAR, "").split(",") if u.strip()]


def alert_webhook_secret() -> str:
    return os.environ.get(ALERT_WEBHOOK_SECRET_VAR, "")


def alert_webhook_networks() -> tuple[IPNetwork, ...]:
    return allowed_networks(
        ALERT_WEBHOOK_NETWORKS_VAR, os.environ.get(ALERT_WEBHOOK_NETWORKS_VAR, "")
    )
