"""Signed webhooks for alert transitions, following the Standard Webhooks spec.

Each configured URL is a sink with its own cursor over the `alerts` topic (a consumer group
per URL, offsets committed only after a delivery): the topic is the outbox. Deliveries to one
sink go in the topic's order, and a transition is retried with backoff until the receiver
takes it, so every sink that was told of an incident's `opened` is told of its `resolved`,
across restarts of the watchdog too. A transition marked `notify: false` (an incident a
parent explains, opened under it) is passed over: its open was never sent, so neither is its
resolve. The `webhook-id` is the transition's `alert_id`, the
same on every retry and every redelivery after a crash: a receiver de-duplicates by it.

The sink (signing, one POST, the SSRF guard of its URLs) and the backoff are
`tickwheel.services.webhooks`, shared with the orchestrator's approval notices; they are
re-exported here for the watchdog's callers.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import watermarks
from tickwheel.core.timefmt import format_utc
from tickwheel.records import Alert
from tickwheel.services.webhooks import (
    RETRYABLE_CLIENT_ERRORS,
    TIMEOUT_S,
    Outcome,
    WebhookSink,
    backoff_s,
    sink_guard,
)

__all__ = [
    "RETRYABLE_CLIENT_ERRORS",
    "TIMEOUT_S",
    "Outcome",
    "WebhookDispatcher",
    "WebhookSink",
    "backoff_s",
    "payload",
    "sink_guard",
]

log = logging.getLogger("tickwheel.watchdog")


def payload(alert: Alert) -> dict[str, Any]:
    """The Standard Webhooks body of one `Alert` transition: `type`, `timestamp`, `data`."""
    try:
        lifecycle = json.loads(alert["details"] or "{}")
    except ValueError:
        lifecycle = {}
    data: dict[str, Any] = {
        "alert_id": alert["alert_id"],
        "event_time": alert["event_time"],
        "kind": alert["kind"],
        "severity": alert["severity"],
        "job_id": alert["job_id"],
        "tenant_id": alert["tenant_id"],
        "message": alert["message"],
    }
    data.update({k: v for k, v in lifecycle.items() if k != "evidence"})
    data["evidence"] = lifecycle.get("evidence", {})
    return {
        "type": f"alert.{lifecycle.get('transition', 'raised')}",
        "timestamp": format_utc(int(alert["event_time"])),
        "data": data,
    }


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
                        offsets=[
                            TopicPartition(
                                message.topic(), message.partition(), message.offset() + 1
                            )
                        ],
                        asynchronous=False,
                    )
        except KafkaException as exc:
            log.error(
                "webhook dispatcher stopped",
                extra={"action": "webhook_stopped", "sink": self.sink.name, "error": str(exc)},
            )
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
            alert = decode_as(Alert, value)
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
                    extra={
                        "action": f"webhook_{outcome}",
                        "sink": self.sink.name,
                        "alert_id": alert["alert_id"],
                        "attempt": attempt,
                        "status": detail,
                    },
                )
                return
            wait = backoff_s(attempt, *self.backoff)
            log.warning(
                f"webhook retry in {wait:.1f} s: {detail}",
                extra={
                    "action": "webhook_retry",
                    "sink": self.sink.name,
                    "alert_id": alert["alert_id"],
                    "attempt": attempt,
                    "error": detail,
                },
            )
            self._wake.wait(wait)
