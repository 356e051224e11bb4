"""The history sink's loop: consume every event topic, write batches to ClickHouse, and commit
the Kafka offsets only once ClickHouse has the batch.

Idempotence (decision 0030): each table's insert carries a deduplication token derived from
the topic/partition/offset ranges it holds, so a batch redelivered whole after a crash between
insert and commit is dropped on arrival; and every row's `event_id` is deterministic, so a
redelivery cut into other batches collapses under `FINAL` / `uniqExact(event_id)`.

A record that cannot be decoded, or decodes to something no table can hold, goes to the
dead-letter topic with its topic/partition/offset, and the sink keeps going.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tickwheel.adapters.avro import UndecodableRecord
from tickwheel.adapters.kafka.client import KafkaError, KafkaException, TopicPartition
from tickwheel.clock import SystemClock
from tickwheel.ports.history import HistoryStore
from tickwheel.ports.kafka import GroupConsumer
from tickwheel.services.history.batch import Batch
from tickwheel.services.history.batch_writes import BatchWrites
from tickwheel.services.history.columnar import EncodedInsert, EncodedKind, encoded_kinds
from tickwheel.services.history.pipeline import InsertInFlight
from tickwheel.services.history.routes import Route, default_routes
from tickwheel.services.history.rows import Source, UnstorableRecord
from tickwheel.services.history.sink_stats import SinkStats

__all__ = ["HistorySink", "Route", "default_routes"]

log = logging.getLogger("tickwheel.history")

# The most records one read of a batch asks for; a read that gets them all says the flow is
# busy (decision 0171).
READ_CHUNK = 1000
# How long a busy flow's batch stays open (decision 0171): 10,000+ records a second then make
# batches of 10,000+, not the 2,000-3,000 a 200 ms wait gave.
BUSY_WAIT_S = 1.0


class DeadLetters(Protocol):
    """Where a record nothing can store goes (`DeadLetterWriter`; a list in unit tests)."""

    def undecodable(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: str | None,
        raw: bytes | None,
        reason: str,
        kind: str = "undecodable",
    ) -> None: ...


class HistorySink(BatchWrites):
    """One consumer, one store. `step()` reads one batch, writes it, and commits it.

    With a store that can insert encoded records (`EncodedInsert`: both ClickHouse backends)
    and `encoded` left on, execution events and requests of the current schema version take
    the fast path (`columnar.py`); everything else, and any batch the fast insert refuses,
    takes the row path."""

    def __init__(
        self,
        store: HistoryStore,
        consumer: GroupConsumer[TopicPartition],
        dead_letters: DeadLetters,
        *,
        routes: Mapping[str, Route[Any]] | None = None,
        max_batch: int = 5000,
        max_wait_s: float = 0.2,
        busy_wait_s: float = BUSY_WAIT_S,
        after_insert: Callable[[int], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now_ms: Callable[[], int] | None = None,
        encoded: bool = True,
        pipelined: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._encoded_store = store if encoded and isinstance(store, EncodedInsert) else None
        self._kinds: dict[str, EncodedKind] = encoded_kinds() if self._encoded_store else {}
        self.consumer = consumer
        self.dead_letters = dead_letters
        self.routes = dict(routes or default_routes())
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.busy_wait_s = max(busy_wait_s, max_wait_s)
        self._monotonic = monotonic
        self.after_insert = after_insert
        self.stats = SinkStats()
        self._sleep = sleep
        self._now_ms = now_ms or (lambda: int(SystemClock().now() * 1000))
        self._pending = Batch()
        # With `pipelined`, a batch's insert runs while the next batch is read (decision
        # 0150); its commit waits for the next `step`, `finish` or revocation.
        self._in_flight = InsertInFlight() if pipelined else None
        # Both threads may dead-letter (a bad record read; a refused frame's rows).
        self._dead_letter_lock = threading.Lock()

    # -- the group -------------------------------------------------------------------------
    def subscribe(self) -> None:
        self.consumer.subscribe(
            sorted(self.routes), on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        # The batch being inserted is committed before the partitions go: its records are
        # written, so the new owner must not read them again.
        self._commit_in_flight()
        dropped = self._pending.drop((tp.topic, tp.partition) for tp in partitions)
        if dropped:
            log.info(
                "partitions revoked; their unwritten records are left to the new owner",
                extra={"action": "history_partitions_revoked", "dropped_rows": dropped},
            )

    # -- one batch -------------------------------------------------------------------------
    def step(self, idle_timeout_s: float = 0.5) -> int:
        """Read up to `max_batch` records (waiting at most `max_wait_s` once the first has
        arrived, `busy_wait_s` while reads keep filling their chunks), write them, commit
        them. Returns how many records the batch held."""
        batch = self._pending = Batch()
        # poll() returns as soon as one record is there; consume() below blocks until it has
        # its count or its timeout, which is right only once the batch wait has started.
        first = self.consumer.poll(idle_timeout_s)
        if first is None:
            self._commit_in_flight()
            self._measure_lag()
            return 0
        started = self._monotonic()
        deadline, busy_deadline = started + self.max_wait_s, started + self.busy_wait_s
        self._accept(batch, first)
        busy = False  # did the last read fill its whole chunk?
        while batch.size < self.max_batch:
            now = self._monotonic()
            # A flow that fills whole chunks keeps the batch open up to `busy_wait_s`: fewer,
            # larger inserts cost chDB less per record (decision 0171); a light flow's batch
            # still ends at `max_wait_s`, so a quiet system's events are as soon visible.
            timeout = (busy_deadline if busy else deadline) - now
            if timeout <= 0:
                break
            chunk = min(self.max_batch - batch.size, READ_CHUNK)
            messages = self.consumer.consume(chunk, timeout)
            if not messages:
                break  # the wait is over (a client that never blocks: nothing more there)
            busy = len(messages) == chunk
            for message in messages:
                self._accept(batch, message)
        if batch.offsets:
            if self._in_flight is None:
                self.write(batch)
            else:
                self._commit_in_flight(unwritten=batch.size)
                self._in_flight.start(batch, self._insert_batch)
        return batch.size

    def finish(self) -> None:
        """Commit the batch still being inserted, if any, and stop the insert thread: a
        pipelined sink's last step before its consumer closes."""
        self._commit_in_flight()
        if self._in_flight is not None:
            self._in_flight.close()

    def _commit_in_flight(self, unwritten: int = 0) -> None:
        if self._in_flight is not None:
            done = self._in_flight.finish()
            if done is not None:
                self._commit(done, unwritten)

    def _accept(self, batch: Batch, message: Any) -> None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                log.warning(
                    "consumer error",
                    extra={"action": "history_consume_error", "error": str(error)},
                )
            return
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        batch.note(topic, partition, offset)
        self.stats.records += 1
        route = self.routes.get(topic)
        if route is None:
            return
        timestamp_ms = int(message.timestamp()[1])
        if timestamp_ms > batch.newest_ms:
            batch.newest_ms = timestamp_ms
        value = message.value()
        kind = self._kinds.get(route.schema)
        if kind is not None and value is not None and value.startswith(kind.header):
            batch.add_encoded(kind, message, value, topic, partition, offset)
            return
        self._accept_row(batch, route, message, Source(topic, partition, offset, timestamp_ms))

    def _accept_row(self, batch: Batch, route: Route[Any], message: Any, source: Source) -> None:
        raw_key = message.key()
        key = raw_key.decode("utf-8", errors="replace") if raw_key is not None else None
        value = message.value()
        if value is None:
            # Only a compacted topic's tombstone means something (a deletion of a definition
            # or a calendar); elsewhere a tombstone carries nothing to record.
            if route.tombstone is not None and key is not None:
                try:
                    batch.add(route.table, route.tombstone(key, source))
                except UnstorableRecord as exc:
                    self._dead_letter(source, key, b"", f"unstorable: {exc.reason}")
            return
        try:
            made = route.rows(value, source)
        except UndecodableRecord as exc:
            self._dead_letter(source, key, value, exc.reason)
            return
        except UnstorableRecord as exc:
            self._dead_letter(source, key, value, f"unstorable: {exc.reason}")
            return
        except (KeyError, TypeError, ValueError) as exc:
            self._dead_letter(source, key, value, f"unstorable: {type(exc).__name__}: {exc}")
            return
        for table, row in made:
            batch.add(table, row)

    def _dead_letter(self, source: Source, key: str | None, value: bytes, reason: str) -> None:
        with self._dead_letter_lock:
            self.dead_letters.undecodable(
                source.topic, source.partition, source.offset, key, value, reason
            )
            self.stats.dead_lettered += 1

    # -- write, then commit ----------------------------------------------------------------
    def write(self, batch: Batch) -> None:
        """Insert every table's rows, then commit the batch's offsets (never the other way)."""
        self._insert_batch(batch)
        self._commit(batch)

    def _commit(self, batch: Batch, unwritten: int = 0) -> None:
        try:
            self.consumer.commit(offsets=batch.commit_offsets(), asynchronous=False)
            self._measure_lag(batch, unwritten)
        except KafkaException as exc:
            # A rebalance got in between: the records come back to whoever owns the
            # partitions now, and the idempotent write makes the second delivery harmless.
            self.stats.commits_failed += 1
            log.warning(
                "offset commit failed; the batch will be delivered again",
                extra={"action": "history_commit_failed", "error": str(exc)},
            )

    def _measure_lag(self, batch: Batch | None = None, unwritten: int = 0) -> None:
        """Records behind on the assigned partitions after `batch`: each one's cached high
        watermark less the consumer's position (both local to the client: no broker round
        trip). Idle (no batch): zero, since everything fetched is written; what watermarks
        would still show past the positions are transaction markers, not records."""
        if batch is None:
            self.stats.lag_records = self.stats.lag_ms = 0
            return
        try:
            positions = self.consumer.position(self.consumer.assignment())
        except KafkaException:
            return
        unknown = [tp for tp in positions if tp.offset < 0]
        if unknown:
            # Nothing read there since the assignment: measure from the committed offset (one
            # round trip, only for these partitions, until a record is read from them).
            try:
                known = {(tp.topic, tp.partition): tp for tp in positions if tp.offset >= 0}
                for tp in self.consumer.committed(unknown, timeout=1.0):
                    known[(tp.topic, tp.partition)] = tp
                positions = list(known.values())
            except KafkaException:
                positions = [tp for tp in positions if tp.offset >= 0]
        lag = 0
        for tp in positions:
            try:
                low, high = self.consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            # No commit either: the group starts at the beginning (auto.offset.reset=earliest).
            start = tp.offset if tp.offset >= 0 else low
            if high >= 0 and start >= 0:
                lag += max(0, high - start)
        # Records read past this batch and not yet written (the next batch, pipelined).
        self.stats.lag_records = lag + unwritten
        if batch.newest_ms > 0:
            self.stats.lag_ms = max(0, self._now_ms() - batch.newest_ms)
