"""Signed webhooks for alert transitions, following the Standard Webhooks spec.

Each configured URL is a sink with its own cursor over the `alerts` topic (a consumer group
per URL, offsets committed only after a delivery): the topic is the outbox. Deliveries to one
sink go in the topic's order, and a transition is retried with backoff until the receiver
takes it, so every sink that was told of an incident's `opened` is told of its `resolved`,
across restarts of the watchdog too. A transition marked `notify: false` (an incident a
parent explains, opened under it) is passed over: its open was never sent, so neither is its
resolve. The `webhook-id` is the transition's `alert_id`, the
same on every retry and every redelivery after a crash: a receiver de-duplicates by it.

URLs pass the `http` job type's SSRF guard (`tickwheel.jobtypes.ssrf`): the operator's URL
names its own host, and every address it resolves to must be public unless
`TICKWHEEL_WATCHDOG_WEBHOOK_ALLOWED_NETWORKS` opens a private range. No redirects are
followed: a receiver that moved is a configuration to fix, not a hop to take.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from standardwebhooks import Webhook

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import watermarks
from tickwheel.clock import Clock
from tickwheel.core.targets import IPNetwork, url_problem
from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput
from tickwheel.jobtypes.http import fetch
from tickwheel.jobtypes.ssrf import SsrfGuard
from tickwheel.sdk.worker import PermanentError, RetryableError

log = logging.getLogger("tickwheel.watchdog")

Outcome = Literal["delivered", "retry", "rejected"]
# 4xx a receiver may answer for a moment (timeout, conflict, too early, rate limit): retried.
RETRYABLE_CLIENT_ERRORS = frozenset({408, 409, 425, 429})
TIMEOUT_S = 10.0


def backoff_s(attempt: int, first_s: float, cap_s: float) -> float:
    """The wait before retry `attempt` (1-based): doubling from `first_s`, at most `cap_s`."""
    return float(min(cap_s, first_s * 2 ** min(attempt - 1, 30)))


def payload(alert: Mapping[str, Any]) -> dict[str, Any]:
    """The Standard Webhooks body of one `Alert` transition: `type`, `timestamp`, `data`."""
    try:
        lifecycle = json.loads(alert.get("details") or "{}")
    except ValueError:
        lifecycle = {}
    data = {key: alert[key] for key in ("alert_id", "event_time", "kind", "severity", "job_id",
                                        "tenant_id", "message")}  # fmt: skip
    data.update({k: v for k, v in lifecycle.items() if k != "evidence"})
    data["evidence"] = lifecycle.get("evidence", {})
    return {
        "type": f"alert.{lifecycle.get('transition', 'raised')}",
        "timestamp": format_utc(int(alert["event_time"])),
        "data": data,
    }


def sink_guard(urls: list[str], allowed_networks: tuple[IPNetwork, ...]) -> SsrfGuard:
    """The guard for the configured URLs: their own hosts allowed, addresses still vetted.
    A URL refused by its text alone is refused at start-up, naming it."""
    hosts = set()
    for url in urls:
        problem = url_problem(url, allowed_networks)
        if problem is not None:
            raise InvalidInput("TICKWHEEL_WATCHDOG_WEBHOOKS", problem)
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
            response = fetch(self.guard, self.url, "POST", body.encode(), headers, TIMEOUT_S,
                             max_redirects=0)  # fmt: skip
        except RetryableError as exc:
            return "retry", str(exc)
        except PermanentError as exc:  # the guard refused the address: a setting to change
            return "retry", str(exc)
        if 200 <= response.status < 300:
            return "delivered", str(response.status)
        if 400 <= response.status < 500 and response.status not in RETRYABLE_CLIENT_ERRORS:
            return "rejected", str(response.status)
        return "retry", str(response.status)


class WebhookDispatcher(threading.Thread):
    """Delivers every transition on `alerts` to one sink, in order, each until it lands.

    The cursor is the sink's consumer group (`<watchdog group>-webhook-<sha(url)>`); a new sink
    starts at the topic's end (no history storm) and commits that start at once."""

    def __init__(
        self,
        sink: WebhookSink,
        bootstrap: str,
        topic: str,
        partitions: int,
        group: str,
        backoff: tuple[float, float],
        observe: Callable[[Outcome], None] = lambda _outcome: None,
    ) -> None:
        super().__init__(name=f"webhook-{sink.name}", daemon=True)
        self.sink = sink
        self.topic, self.partitions = topic, partitions
        self.backoff = backoff
        self.observe = observe
        self.running = True
        self._wake = threading.Event()
        self.consumer = Consumer(consumer_config(f"{group}-webhook-{sink.name}", bootstrap))

    def stop(self) -> None:
        self.running = False
        self._wake.set()

    def run(self) -> None:
        try:
            self.consumer.assign(self._start())
            while self.running:
                for message in self.consumer.consume(100, 0.5):
                    if not self.running:
                        return
                    if message.error() or message.value() is None:
                        continue
                    self._deliver(message.value())
                    self.consumer.commit(
                        offsets=[TopicPartition(message.topic(), message.partition(),
                                                message.offset() + 1)],
                        asynchronous=False,
                    )  # fmt: skip
        except KafkaException as exc:
            log.error("webhook dispatcher stopped", extra={"action": "webhook_stopped",
                      "sink": self.sink.name, "error": str(exc)})  # fmt: skip
        finally:
            self.consumer.close()

    def _start(self) -> list[TopicPartition]:
        wanted = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        committed = self.consumer.committed(wanted, timeout=30)
        start = []
        for tp in committed:
            if tp.offset < 0:
                tp = TopicPartition(tp.topic, tp.partition, watermarks(self.consumer, tp)[1])
                self.consumer.commit(offsets=[tp], asynchronous=False)
            start.append(tp)
        return start

    def _deliver(self, value: bytes) -> None:
        try:
            alert = decode(value, "Alert")[1]
        except UndecodableRecord:
            return
        body_data = payload(alert)
        if body_data["data"].get("notify") is False:
            return  # a child its parent explains: shown on the topic, not sent to people
        body = json.dumps(body_data, sort_keys=True, default=str)
        attempt = 0
        while self.running:
            attempt += 1
            outcome, detail = self.sink.send(str(alert["alert_id"]), body)
            self.observe(outcome)
            if outcome != "retry":
                log.info(
                    f"webhook {outcome}: {alert['alert_id']}",
                    extra={"action": f"webhook_{outcome}", "sink": self.sink.name,
                           "alert_id": alert["alert_id"], "attempt": attempt, "status": detail},
                )  # fmt: skip
                return
            wait = backoff_s(attempt, *self.backoff)
            log.warning(
                f"webhook retry in {wait:.1f} s: {detail}",
                extra={"action": "webhook_retry", "sink": self.sink.name,
                       "alert_id": alert["alert_id"], "attempt": attempt, "error": detail},
            )  # fmt: skip
            self._wake.wait(wait)
