"""The watchdog service: reads the definitions, requests, execution events, dead letters and
its commands (acknowledgements) itself, folds them into the core's evaluator and, each tick, evaluates at the event-time
watermark of its inputs (docs/watchdog.md, decision 0056).

Exactly-once alerts: one owner, transactional id `<prefix>tickwheel-watchdog`. Its
`init_transactions()` fences any earlier watchdog and waits out its open transaction; only
then is `watchdog.state` read (read_committed). Each tick's transitions (to `alerts`), the
incidents they changed and the checkpoint (input offsets, watermark) go to Kafka in one
transaction, so a restarted or duplicated watchdog neither repeats nor forgets an alert.

A restart folds every input again from the beginning (the facts are not snapshotted yet,
decision 0056) and evaluates nothing before it has read past the checkpointed offsets and
the watermark has passed the checkpointed one.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tickwheel import records
from tickwheel.adapters.avro import UndecodableRecord, decode, decode_as, encode, record_name
from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    TopicPartition,
)
from tickwheel.adapters.kafka.config import BULK_READER_FETCH, consumer_config
from tickwheel.adapters.kafka.producer import TransactionalProducer, is_fatal
from tickwheel.adapters.kafka.reader import decode_key, read_to_end, watermarks
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.watchdog import Incident, Observed, Transition, WatchdogState, evaluate
from tickwheel.core.watchdog.facts import InputKind
from tickwheel.core.watchdog.freshness import failed_queries, stale_outputs
from tickwheel.core.watchdog.freshness import queries as output_queries
from tickwheel.core.watchdog.freshness import topics as output_topics
from tickwheel.core.watchdog.parents import ages
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.logs import configure_logging
from tickwheel.records import Alert
from tickwheel.runtime.shutdown import KAFKA_BUDGET_S, ShutdownDeadline, serve
from tickwheel.services.environment import load, log_level
from tickwheel.services.watchdog.freshness_probe import FreshnessProbe
from tickwheel.services.watchdog.metrics import WatchdogMetrics
from tickwheel.services.watchdog.progress import LagWatch, watermark
from tickwheel.services.watchdog.records import (
    CHECKPOINT_KEY,
    checkpoint_record,
    incident_record,
    parse_state_record,
    partition_key,
)
from tickwheel.services.watchdog.remembered import (
    KeptFacts,
    RememberedSuccess,
    RememberedVersions,
    parse_success,
    parse_versions,
)
from tickwheel.services.watchdog.second_detector import SecondDetector
from tickwheel.services.watchdog.settings import WatchdogSettings
from tickwheel.services.watchdog.sql_freshness import SqlFreshnessProbe
from tickwheel.services.watchdog.webhooks import WebhookDispatcher, WebhookSink, sink_guard
from tickwheel.topology import topic as declared_topic
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.watchdog")

BATCH = 5000
# What a `watchdog.state` record holds, parsed (the checkpoint: offsets and watermark).
StateRecord = RememberedSuccess | RememberedVersions | Incident | tuple[dict[str, int], int | None]


class WatchdogFenced(TickwheelError, RuntimeError):
    """A newer watchdog took over: this one's transactions are rejected, so it stops."""


class WatchdogService:
    def __init__(
        self,
        settings: WatchdogSettings,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.deadline = deadline
        self.running = True
        self.metrics = WatchdogMetrics()
        self.alerts_topic = topic_name("alerts")
        self.state_topic = topic_name("watchdog.state")
        # topic -> the kind of input its records are
        declared: dict[str, InputKind] = {
            "jobs.definitions": "definition",
            "executions.events": "event",
            "executions.dlq": "dead_letter",
            # An operator's retry or discard: the letter stops counting (decision 0102).
            "executions.dlq.resolutions": "dead_letter_resolution",
            "watchdog.commands": "command",
            # Holiday calendars: what a business-day job owed is compiled with them, as the
            # timer compiles it (a slot skipped for a holiday is not owed).
            "calendars": "calendar",
            # Workflows: a step past its definition's expectedDuration (workflow_step_stuck).
            "workflows.definitions": "workflow_definition",
            "workflows.events": "workflow_event",
            **{f"executions.{p}": "request" for p in ("high", "normal", "low")},
        }
        self.inputs = {topic_name(name): kind for name, kind in declared.items()}
        # The record each kind is decoded as (the fold casts to the same types).
        self.schemas: dict[InputKind, str] = {
            "definition": record_name(records.JobDefinition),
            "event": record_name(records.ExecutionEvent),
            "dead_letter": record_name(records.DeadLetter),
            "request": record_name(records.ExecutionRequest),
            "dead_letter_resolution": record_name(records.DeadLetterResolution),
            "command": record_name(records.Alert),
            "calendar": record_name(records.Calendar),
            "workflow_definition": record_name(records.WorkflowDefinition),
            "workflow_event": record_name(records.WorkflowEvent),
        }
        self.partitions = [
            TopicPartition(topic_name(name), p)
            for name in declared
            for p in range(declared_topic(name).partitions)
        ]
        self.state = WatchdogState()
        self.offsets: dict[str, int] = {}  # next offset to read, per input partition
        self.newest_ms: dict[str, int] = {}
        self.replay_until: dict[str, int] = {}
        self.checkpoint_watermark: int | None = None
        self.changed: set[str] = set()
        self.kept = KeptFacts()  # last successes and paused jobs' versions (0189, 0190)
        self.caught_up = False  # read past where the last owner's checkpoint stood
        self.moved = False
        self._last_now_ms = 0
        self.producer = TransactionalProducer(topic_name("tickwheel-watchdog"), settings.bootstrap)
        group = topic_name("tickwheel-watchdog")
        # It reads every input and evaluates per tick: fetches that wait for a chunk (0172).
        self.consumer = Consumer(
            consumer_config(f"{group}-inputs-unused", settings.bootstrap, **BULK_READER_FETCH)
        )
        # Never assigned anything, so it answers where partitions end at once.
        self.probe = Consumer(consumer_config(f"{group}-watermarks-unused", settings.bootstrap))
        self.dispatchers = self._dispatchers(group)
        self.lag_watch = LagWatch(settings.lag_alert_ms)
        self.freshness = FreshnessProbe(settings.bootstrap, group, settings.freshness_every_ms)
        self.sql_freshness = SqlFreshnessProbe(settings.freshness_every_ms)
        self.audit = SecondDetector(*settings.audit)

    def _dispatchers(self, group: str) -> list[WebhookDispatcher]:
        settings = self.settings
        if not settings.webhooks:
            return []
        if not settings.webhook_secret:
            raise InvalidInput(
                "TICKWHEEL_WATCHDOG_WEBHOOK_SECRET",
                "is not set while TICKWHEEL_WATCHDOG_WEBHOOKS is; accepted: whsec_ + base64",
            )
        guard = sink_guard(settings.webhooks, settings.webhook_allowed_networks)
        partitions = declared_topic("alerts").partitions
        return [
            WebhookDispatcher(
                WebhookSink(url, settings.webhook_secret, guard, self.clock),
                settings.bootstrap,
                self.alerts_topic,
                partitions,
                group,
                settings.webhook_backoff_s,
                observe=lambda outcome: self.metrics.webhooks.labels(outcome).inc(),
            )
            for url in settings.webhooks
        ]

    def now_ms(self) -> int:
        self._last_now_ms = max(self._last_now_ms, int(self.clock.now() * 1000))
        return self._last_now_ms

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        verify_topology(bootstrap=self.settings.bootstrap)
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port, self.settings.metrics_addr)
        self.producer.init()  # fences an earlier watchdog and waits out its transaction
        self._restore()
        for dispatcher in self.dispatchers:
            dispatcher.start()
        self.consumer.assign(
            [TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in self.partitions]
        )
        log.info(
            "watchdog started",
            extra={
                "action": "watchdog_started",
                "instance": self.settings.instance,
                "incidents": len(self.state.incidents),
                "open": len(self.state.open_incidents()),
            },
        )
        next_tick = time.monotonic()
        try:
            while self.running:
                self._consume(max(0.0, next_tick - time.monotonic()))
                if time.monotonic() >= next_tick:
                    self.tick()
                    next_tick = time.monotonic() + self.settings.tick_ms / 1000
        finally:
            for dispatcher in self.dispatchers:
                dispatcher.stop()
            self.producer.flush(self._flush_budget())
            for dispatcher in self.dispatchers:
                dispatcher.join(self._flush_budget())
            self.consumer.close()
            self.probe.close()
            self.freshness.close()
            self.sql_freshness.close()
            self.audit.close()

    def stop(self, *_args: Any) -> None:
        self.running = False
        if self.deadline is not None:
            self.deadline.arm(KAFKA_BUDGET_S)

    def _flush_budget(self) -> float:
        remaining = self.deadline.remaining() if self.deadline is not None else 5.0
        return min(5.0, remaining)

    def _restore(self) -> None:
        started = time.monotonic()
        # As compaction leaves it, each record parsed as it is read: the last of each key, and
        # none for a key whose last record is a tombstone (a deleted job's kept facts, 0190).
        kept: dict[str, StateRecord] = {}
        for record in read_to_end(self.state_topic, None, self.settings.bootstrap):
            if record.key is None:
                continue
            kept.pop(record.key, None)
            if record.value is None:
                continue
            try:
                value = decode_as(Alert, record.value)
                parsed = parse_success(value) or parse_versions(value) or parse_state_record(value)
            except (UndecodableRecord, KeyError, TypeError, ValueError):
                self.metrics.undecodable.inc()
                continue
            kept[record.key] = parsed
        for parsed in kept.values():
            if isinstance(parsed, RememberedSuccess):  # as its `succeeded` event folds (0189)
                self.state.facts.job(parsed.job_id).succeeded(parsed.at, parsed.slot)
            elif isinstance(parsed, RememberedVersions):  # as a replay of every version (0190)
                self.state.facts.jobs.remember_versions(parsed.job_id, parsed.versions)
                self.kept.versions_on_topic.add(parsed.job_id)
            elif isinstance(parsed, Incident):
                self.state.incidents[parsed.fingerprint] = parsed
            else:
                self.replay_until, self.checkpoint_watermark = parsed
        # Evaluations resume where the last committed one stood, never before it.
        self.state.watermark = self.checkpoint_watermark
        log.info(
            "watchdog state restored",
            extra={
                "action": "watchdog_restored",
                "incidents": len(self.state.incidents),
                "watermark": self.checkpoint_watermark,
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    # -- inputs ----------------------------------------------------------------------------
    def _consume(self, timeout: float) -> None:
        for message in self.consumer.consume(BATCH, timeout):
            if message.error():
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            key = partition_key(topic, partition)
            self.offsets[key] = offset + 1
            self.newest_ms[key] = max(self.newest_ms.get(key, 0), message.timestamp()[1])
            self.moved = True
            kind = self.inputs.get(topic)
            text, _ = decode_key(message.key())
            value = message.value()
            if kind is None or text is None:
                continue
            record = None
            if value is not None:
                try:
                    record = decode(value, self.schemas[kind])[1]
                except UndecodableRecord:
                    self.metrics.undecodable.inc()
                    continue
            elif kind not in ("definition", "calendar"):
                continue
            self.state.apply(Observed(kind, text, record, partition))
            if kind == "definition":
                self.kept.redefined.add(text)
            elif kind == "event" and record is not None and record["event_type"] == "succeeded":
                self.kept.succeeded.add(str(record["job_id"]))

    def _watermark(self, now: int) -> int | None:
        ends: dict[str, int] = {}
        positions: dict[str, int] = {}
        try:
            current = self.consumer.position(self.partitions)
        except KafkaException:
            return None
        for tp, at in zip(self.partitions, current, strict=True):
            key = partition_key(tp.topic, tp.partition)
            low, high = watermarks(self.probe, TopicPartition(tp.topic, tp.partition))
            ends[key] = high
            positions[key] = max(at.offset, low, self.offsets.get(key, low))
        if any(positions.get(k, 0) < end for k, end in self.replay_until.items() if k in ends):
            return None  # still folding what the last owner had read when it evaluated
        self.caught_up = True
        return watermark(positions, ends, self.newest_ms, now, self.settings.lateness_ms)

    # -- the tick ----------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.now_ms()
        mark = self._watermark(now)
        transitions: list[Transition] = []
        if mark is not None:
            lagging = self.lag_watch.observe(now, mark)
            self.freshness.refresh(output_topics(self.state.facts), now)
            self.sql_freshness.refresh(output_queries(self.state.facts), now)
            newest = {**self.freshness.newest, **self.sql_freshness.newest}
            extra = [
                *([lagging] if lagging else []),
                *stale_outputs(self.state.facts, newest, now),
                *failed_queries(self.state.facts, self.sql_freshness.failing),
                *self.audit.conditions(self.state, now, self.settings.thresholds),
            ]
            transitions, changed = evaluate(self.state, mark, self.settings.thresholds, extra)
            self.changed |= changed
            self.metrics.lag.set(max(0, now - mark) / 1000)
            self.metrics.last_evaluation.set(now / 1000)
            self.metrics.observe_ages(*ages(self.state.facts, mark))
        if transitions or self.changed or self.moved:
            self._commit(transitions, now)
        self.metrics.observe_open(self.state.open_incidents())

    def _commit(self, transitions: list[Transition], now: int) -> None:
        producer = self.producer
        try:
            producer.begin()
            for transition in transitions:
                record = transition.record()
                producer.send(self.alerts_topic, record["alert_id"], encode("Alert", record))
            for fp in sorted(self.changed):
                incident = self.state.incidents[fp]
                producer.send(self.state_topic, fp, encode("Alert", incident_record(incident)))
            grace_ms = self.settings.thresholds.derived_grace_ms
            for key, kept in self.kept.writes(self.state.facts.jobs, grace_ms, now, self.caught_up):
                producer.send(
                    self.state_topic, key, None if kept is None else encode("Alert", kept)
                )
            producer.send(
                self.state_topic,
                CHECKPOINT_KEY,
                encode("Alert", checkpoint_record(self.offsets, self.state.watermark, now)),
            )
            producer.commit()
        except KafkaException as exc:
            # Memory has moved past what Kafka holds: start again from what was committed.
            if is_fatal(exc):
                raise WatchdogFenced(f"fenced by a newer watchdog: {exc}") from exc
            raise
        self.changed.clear()
        self.kept.committed()
        self.moved = False
        for transition in transitions:
            self._log(transition)

    def _log(self, transition: Transition) -> None:
        self.metrics.transitions.labels(transition.transition).inc()
        incident = transition.incident
        log.info(
            f"alert {transition.transition}: {incident.message}",
            extra={
                "action": f"alert_{transition.transition}",
                "incident_id": incident.incident_id,
                "kind": incident.kind,
                "subject": incident.subject,
                "job_id": incident.job_id,
                "tenant_id": incident.tenant_id,
                "severity": incident.severity,
                "event_time": transition.at,
            },
        )


def main(argv: list[str] | None = None) -> None:
    settings = load(WatchdogSettings, "watchdog", argv, description="The tickwheel watchdog.")
    configure_logging(log_level(settings.log_level))
    serve(
        log,
        "watchdog",
        lambda deadline: WatchdogService(settings, deadline=deadline),
        exit_codes={WatchdogFenced: 3},  # a newer watchdog owns the alerts now
    )
