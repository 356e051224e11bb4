"""Approval notices as signed webhooks (Standard Webhooks, decision 0132).

When an approval round opens (`approval_requested`: the first round, a reassignment's or an
escalation's new round), when a round is escalated (`approval_escalated`) and when it times
out (`approval_timed_out`), each configured sink is POSTed a notice signed with
`TICKWHEEL_APPROVAL_WEBHOOK_SECRET`: the watchdog's sink (`tickwheel.services.webhooks`),
reused. An opened round's notice carries its link — the signed, single-use token — which is
never written to a topic: it is signed here, at delivery, from the event (the round and its
expiry), so every redelivery carries the same link.

`workflows.events` is the outbox, as `alerts` is the watchdog's: per sink, a consumer group
shared by the orchestrator instances (`<group>-approval-webhook-<sha(url)>`, so each
partition's notices are sent by one of them), offsets committed only once what they cover
was delivered. A notice is retried with backoff until the receiver takes it (or refuses it
with a 4xx), in the topic's order per partition; the `webhook-id` is the event's id
(`wf:<workflow_id>:<seq>`), the same on every retry and redelivery after a crash: the
receiver de-duplicates by it. A new sink starts at the topic's end (no history storm).
"""

from __future__ import annotations

import contextlib
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
from tickwheel.records import WorkflowEvent
from tickwheel.services.orchestrator.notices import ApprovalNotifier
from tickwheel.services.webhooks import Outcome, WebhookSink, backoff_s

log = logging.getLogger("tickwheel.orchestrator")

# Event type → the notice's `type`.
NOTICE_TYPES = {
    "approval_requested": "approval.requested",
    "approval_escalated": "approval.escalated",
    "approval_timed_out": "approval.timed_out",
}
# Every approval event's type starts so; other events are passed over without decoding.
_APPROVAL_MARK = b"approval_"


def approval_payload(event: WorkflowEvent, notifier: ApprovalNotifier) -> dict[str, Any] | None:
    """The Standard Webhooks body (`type`, `timestamp`, `data`) of one `WorkflowEvent`, or None
    for an event that is no approval notice."""
    kind = NOTICE_TYPES.get(event["event_type"])
    if kind is None or event.get("step_id") is None:
        return None
    base = {
        "event_id": event["event_id"],
        "workflow_id": event["workflow_id"],
        "definition_id": event["definition_id"],
        "definition_version": event["definition_version"],
        "step_id": event["step_id"],
        "tenant_id": event.get("tenant_id"),
        "seq": event.get("seq"),
    }
    if kind == "approval.requested":
        data = {**base, **notifier.notice(event)}
    else:
        data = {**base, "round": json.loads(event.get("data") or "{}").get("round")}
    return {"type": kind, "timestamp": format_utc(int(event["event_time"])), "data": data}


class ApprovalWebhooks(threading.Thread):
    """Delivers the approval notices on `workflows.events` to one sink, each until it lands."""

    def __init__(
        self,
        sink: WebhookSink,
        notifier: ApprovalNotifier,
        bootstrap: str,
        topic: str,
        group: str,
        backoff: tuple[float, float],
        observe: Callable[[Outcome], None] = lambda _outcome: None,
    ) -> None:
        super().__init__(name=f"approval-webhook-{sink.name}", daemon=True)
        self.sink, self.notifier, self.topic = sink, notifier, topic
        self.backoff, self.observe = backoff, observe
        self.group = f"{group}-approval-webhook-{sink.name}"
        self.running = True
        self._wake = threading.Event()
        self.consumer = Consumer(consumer_config(self.group, bootstrap))

    def stop(self) -> None:
        self.running = False
        self._wake.set()

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], on_assign=self._on_assign)
            while self.running:
                messages = self.consumer.consume(100, 0.5)
                ends: dict[int, int] = {}
                for message in messages:
                    if not self.running:
                        return  # not committed: delivered again by whoever reads it next
                    if message.error():
                        continue
                    value = message.value()
                    if value is not None and _APPROVAL_MARK in value and not self._deliver(value):
                        return  # stopped while retrying: not committed, delivered again later
                    ends[message.partition()] = message.offset() + 1
                if ends:
                    self._commit(ends)
        except KafkaException as exc:
            log.error(
                "approval webhooks stopped",
                extra={"action": "webhook_stopped", "sink": self.sink.name, "error": str(exc)},
            )
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                self.consumer.close()

    def _commit(self, ends: dict[int, int]) -> None:
        try:
            self.consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in ends.items()],
                asynchronous=False,
            )
        except KafkaException as exc:  # revoked meanwhile: its next reader sends them again
            log.warning(
                "approval webhook cursor not committed",
                extra={
                    "action": "webhook_commit_failed",
                    "sink": self.sink.name,
                    "error": str(exc),
                },
            )

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """A partition this sink never read starts at its end, committed at once, so notices
        written after this moment are delivered even across a restart."""
        start = []
        for tp in consumer.committed(partitions, timeout=30):
            if tp.offset < 0:
                tp = TopicPartition(tp.topic, tp.partition, watermarks(consumer, tp)[1])
                consumer.commit(offsets=[tp], asynchronous=False)
            start.append(tp)
        consumer.incremental_assign(start)
        log.info(
            "approval webhooks reading",
            extra={
                "action": "approval_webhooks_assigned",
                "sink": self.sink.name,
                "partitions": [tp.partition for tp in start],
            },
        )

    def _deliver(self, value: bytes) -> bool:
        """Send the notice `value` stands for until the sink takes or refuses it; False when
        stopped before that."""
        try:
            event = decode_as(WorkflowEvent, value)
        except UndecodableRecord:
            return True  # not an event this version reads: no notice to send
        body_data = approval_payload(event, self.notifier)
        if body_data is None:
            return True
        body = json.dumps(body_data, sort_keys=True, default=str)
        webhook_id, attempt = str(event["event_id"]), 0
        while self.running:
            attempt += 1
            outcome, detail = self.sink.send(webhook_id, body)
            self.observe(outcome)
            if outcome != "retry":
                log.info(
                    f"approval webhook {outcome}: {webhook_id}",
                    extra={
                        "action": f"approval_webhook_{outcome}",
                        "sink": self.sink.name,
                        "webhook_id": webhook_id,
                        "type": body_data["type"],
                        "attempt": attempt,
                        "status": detail,
                    },
                )
                return True
            wait = backoff_s(attempt, *self.backoff)
            log.warning(
                f"approval webhook retry in {wait:.1f} s: {detail}",
                extra={
                    "action": "approval_webhook_retry",
                    "sink": self.sink.name,
                    "webhook_id": webhook_id,
                    "attempt": attempt,
                    "error": detail,
                },
            )
            self._wake.wait(wait)
        return False
