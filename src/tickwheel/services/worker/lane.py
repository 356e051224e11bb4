"""One priority's lane: its own consumer of `executions.<priority>`, its own pool of slots.

It works in batches: each poll takes up to `BATCH` requests, decodes them, and starts what has
room. Attempts of non-waiting built-in types run inline on this thread, a batch at a time
(`inline.py`); `async def` handlers run on the lane's event loop (`coroutines.py`); every
other handler runs on a slot thread (`runner.py`). All three record the lease before the
handler runs and take the lane's slots and tenant caps into account (decision 0071).

Separate consumers and pools per priority keep a low-priority flood from delaying high
priority. The lane pulls only what it has room for (slots plus a small waiting room); when it
stays full it pauses its partitions, so a saturated worker stops pulling while keeping its
place in the consumer group.

At least once: a request's offset is committed only after its `leased` event (or, for a
request cancelled before it started, its `cancelled` event) is acknowledged (`ledger.py`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial

from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.clock import Clock
from tickwheel.ports.kafka import KafkaMessage
from tickwheel.sdk.worker import HandlerRegistry, JobType
from tickwheel.services.worker.attempt import EventSink
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.coroutines import CoroutineRunner, is_async
from tickwheel.services.worker.heartbeats import HeartbeatScheduler
from tickwheel.services.worker.inline import InlineAttempt, InlineBatch, JobKinds
from tickwheel.services.worker.intake import Pending, RequestIntake
from tickwheel.services.worker.ledger import AttemptKey, LeaseLedger
from tickwheel.services.worker.offsets import OffsetTracker
from tickwheel.services.worker.pulling import PullControl
from tickwheel.services.worker.ready import Skipped, Skips, all_start_inline, sort_inline
from tickwheel.services.worker.runner import AttemptRunner
from tickwheel.services.worker.settings import WorkerSettings, lane_consumer_config
from tickwheel.services.worker.tenants import TenantQueue
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.worker")

# Requests taken per poll while the waiting room is empty and slots are free: the most that can
# wait here beyond the usual waiting room, since the next poll is only for what has room.
BATCH = 500
# The longest one loop turn waits for a first record when nothing is fetched (stop, commits
# and rebalances are served between turns).
POLL_WAIT_S = 0.1


class PriorityLane:
    def __init__(
        self,
        priority: str,
        settings: WorkerSettings,
        *,
        registry: HandlerRegistry,
        sink: EventSink,
        cancels: CancelRegistry,
        heartbeats: HeartbeatScheduler,
        dead_letters: DeadLetterWriter,
        clock: Clock,
        on_fatal: Callable[[str], None],
        consumer: Consumer | None = None,  # tests pass one that talks to no broker
    ) -> None:
        self.priority = priority
        self.topic = topic_name(f"executions.{priority}")
        self.settings = settings
        self.capacity = settings.concurrency[priority]
        self.max_held = self.capacity + (settings.prefetch or self.capacity)
        self.registry = registry
        self.sink = sink
        self.cancels = cancels
        self.heartbeats = heartbeats
        self.dead_letters = dead_letters
        self.clock = clock
        self.on_fatal = on_fatal
        self.worker_id = settings.worker_id
        self.queue: TenantQueue[Pending] = TenantQueue(settings.tenant_cap or self.capacity)
        self.offsets = OffsetTracker()
        self.ledger = LeaseLedger(self.offsets, on_fatal)
        self.running_count = 0
        self.running = True
        self._lock = threading.Lock()
        self._last_commit = 0.0
        self._idle = threading.Condition(self._lock)
        self.kinds = JobKinds(registry)
        self.skips = Skips(
            ledger=self.ledger, cancels=cancels, sink=sink, clock=clock, worker_id=self.worker_id
        )
        self.runner = AttemptRunner(
            self.capacity,
            f"run-{priority}",
            registry=registry,
            sink=sink,
            cancels=cancels,
            heartbeats=heartbeats,
            clock=clock,
            worker_id=self.worker_id,
            max_run_seconds=settings.max_run_seconds,
            on_fatal=on_fatal,
            priority=priority,
        )
        self.inline = InlineBatch(
            sink=sink, clock=clock, worker_id=self.worker_id, priority=priority
        )
        self.coroutines: CoroutineRunner | None = None
        if any(is_async(job_type) for job_type in registry):
            self.coroutines = CoroutineRunner(
                f"loop-{priority}",
                sink=sink,
                cancels=cancels,
                heartbeats=heartbeats,
                clock=clock,
                worker_id=self.worker_id,
                max_run_seconds=settings.max_run_seconds,
                on_fatal=on_fatal,
            )
        self._thread: threading.Thread | None = None
        self.consumer = consumer or Consumer(lane_consumer_config(settings, priority))
        self.pulling = PullControl(self.consumer, priority)
        self.intake = RequestIntake(settings.queue, self.offsets, dead_letters)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self.subscribe()
        self._thread = threading.Thread(
            target=self._loop, name=f"lane-{self.priority}", daemon=True
        )
        self._thread.start()

    def subscribe(self) -> None:
        """Join the lane's consumer group (`start` does, then loops on a thread)."""
        self.consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )

    def stop(self) -> None:
        self.running = False

    @property
    def started_count(self) -> int:
        looped = self.coroutines.started_count if self.coroutines else 0
        return self.runner.started_count + self.inline.started_count + looped

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def assigned(self) -> list[int]:
        try:
            return sorted(tp.partition for tp in self.consumer.assignment())
        except KafkaException:
            return []

    # -- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while self.running:
                self.step()
            self._drain()
        except Exception as exc:
            log.exception("lane failed", extra={"action": "lane_failed", "priority": self.priority})
            self.on_fatal(f"lane {self.priority} failed: {exc}")
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                self.consumer.close()
            self.runner.shutdown()
            if self.coroutines is not None:
                self.coroutines.shutdown()

    def step(self) -> None:
        """One turn of the loop: poll for what there is room for, start what can start, and
        commit what is safely recorded (units on the in-memory broker call it by hand)."""
        with self._lock:
            room = self.max_held - self.running_count - len(self.queue)
            if not self.queue and self.running_count < self.capacity:
                room = BATCH  # what cannot start at once waits, bounded by BATCH
        if room > 0:
            self.pulling.has_room()
            messages = self._take(min(room, BATCH))
        elif self.pulling.is_full(time.monotonic()):
            # Still polled while paused: rebalances and group liveness need it.
            messages = self.consumer.consume(1, 0.05)
        else:
            messages = []
            with self._idle:
                self._idle.wait(0.05)
        ready = self._accept_all(messages, at_once=True)
        if ready:
            self._start_now(ready)
        self._dispatch()
        self._commit(force=False)

    def _take(self, limit: int) -> Sequence[KafkaMessage]:
        """Up to `limit` records: what is already fetched, at once; with nothing fetched, the
        first to arrive (waiting up to `POLL_WAIT_S` for it) and what came with it.
        `consume(limit, timeout)` would hold a part batch back for the whole timeout, so
        the last few hundred requests of a burst, or a quiet stream's, waited 0.1 s each
        time (decision 0146)."""
        messages: Sequence[KafkaMessage] = self.consumer.consume(limit, 0)
        if messages:
            return messages
        first: KafkaMessage | None = self.consumer.poll(POLL_WAIT_S)
        if first is None:
            return []
        return [first, *self.consumer.consume(limit - 1, 0)] if limit > 1 else [first]

    def _accept_all(self, messages: Sequence[KafkaMessage], at_once: bool = False) -> list[Pending]:
        """Queue a poll's requests; with `at_once`, a poll that could all start now as one
        inline batch is returned instead, for `_start_now` (decision 0163)."""
        accepted = self.intake.accept(messages, time.monotonic())
        if not accepted:
            return []
        with self._lock:
            # Nothing waits before them and a slot is free (inline attempts end before the
            # next starts, so no count moves): can the whole poll start as one batch?
            free = self.running and not self.queue and self.running_count < self.capacity
            if at_once and free and all_start_inline(accepted, self.kinds, self.queue):
                return accepted
            for item in accepted:
                self.queue.push(item.request["tenant_id"], item)
        return []

    def _start_now(self, ready: list[Pending]) -> None:
        """Start a poll `all_start_inline` passed, sorted as `_dispatch_batch` sorts."""
        self._start(*sort_inline(ready, self.cancels, self.ledger, self.kinds), [])

    def _accept(self, msg: KafkaMessage) -> None:  # units feed a lane one record at a time
        self._accept_all([msg])

    def _dispatch(self) -> None:
        """Start waiting requests while there are free slots (tenant caps permitting). What is
        popped is sorted under one hold of the lock, up to a batch at a time; the inline
        attempts among it then run as one batch, with one report for all their leases."""
        while self.running and self._dispatch_batch():
            pass

    def _dispatch_batch(self) -> bool:
        """One batch of `_dispatch`; False once nothing more can start."""
        skipped: list[Skipped] = []  # ("cancelled"|"duplicate", ...)
        inline: list[InlineAttempt] = []
        inline_keys: list[AttemptKey] = []
        inline_positions: list[tuple[int, int]] = []
        slots: list[tuple[str, Pending, JobType | None]] = []
        kind_of = self.kinds.of
        with self._lock:
            queue, capacity = self.queue, self.capacity
            while len(inline) + len(skipped) + len(slots) < BATCH:
                if self.running_count >= capacity:
                    break
                popped = queue.pop()
                if popped is None:
                    break
                tenant, item = popped
                request = item.request
                key = (request["execution_id"], request["attempt"])
                kind = kind_of(request["job_type"])
                if self.cancels.is_cancelled(key[0], key[1]):
                    skipped.append(("cancelled", item, key))
                elif not self.ledger.take(key):
                    skipped.append(("duplicate", item, key))
                elif kind[1]:
                    assert kind[0] is not None  # runs_inline says so
                    inline.append(InlineAttempt(request, kind[0]))
                    inline_keys.append(key)
                    inline_positions.append((item.partition, item.offset))
                else:
                    self.running_count += 1
                    slots.append((tenant, item, kind[0]))
                    continue
                queue.release(tenant)  # an inline attempt ends before anything else starts
        self._start(skipped, inline, inline_keys, inline_positions, slots)
        return bool(skipped or inline or slots)

    def _start(
        self,
        skipped: list[Skipped],
        inline: list[InlineAttempt],
        inline_keys: list[AttemptKey],
        inline_positions: list[tuple[int, int]],
        slots: list[tuple[str, Pending, JobType | None]],
    ) -> None:
        """What a sorted batch needs, outside the lock, in order: the cancelled and duplicate
        records, the inline batch, the slot and event-loop submissions."""
        for what, item, key in skipped:
            if what == "cancelled":
                self.skips.cancelled(item)
            else:
                self.skips.duplicate(item, key)
        if inline:
            self.inline.run(inline, self.ledger.delivered_all(inline_keys, inline_positions))
        for tenant, item, job_type in slots:
            if self.coroutines is not None and is_async(job_type):
                assert job_type is not None
                self.coroutines.submit(
                    item.request,
                    job_type,
                    on_leased=self.skips.delivered(item),
                    on_done=partial(self._slot_freed, tenant),
                )
            else:
                self.runner.submit(
                    item.request,
                    on_leased=self.skips.delivered(item),
                    on_done=partial(self._slot_freed, tenant),
                    extra={"wait_ms": int((time.monotonic() - item.received) * 1000)},
                )

    def _slot_freed(self, tenant: str) -> None:
        """An attempt ended (or overran its limit): its slot and tenant share are free."""
        with self._lock:
            self.running_count -= 1
            self.queue.release(tenant)
            self._idle.notify_all()
        self._dispatch()

    # -- offsets and rebalancing -------------------------------------------------------------
    def _commit(self, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_commit < self.settings.commit_interval_s:
            return
        self._last_commit = now
        points = self.offsets.committable(everything=force)
        if not points:
            return
        offsets = [TopicPartition(self.topic, p, o) for p, o in points.items()]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=not force)
        except KafkaException as exc:
            log.warning("commit failed", extra={"action": "commit_failed", "error": str(exc)})
            return
        for partition, offset in points.items():
            self.offsets.committed(partition, offset)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.offsets.assign(tp.partition)
        consumer.incremental_assign(partitions)
        self.pulling.assigned(partitions)
        log.info(
            "partitions assigned",
            extra={
                "action": "partitions_assigned",
                "priority": self.priority,
                "partitions": [tp.partition for tp in partitions],
            },
        )

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        with self._lock:
            dropped = self.queue.drop(lambda item: item.partition in revoked)
        # Leased events of started attempts should land so their offsets can be committed
        # before the partitions move (the new owner would start them again otherwise).
        pending = getattr(self.sink, "pending", None)
        if pending is not None:
            pending(5.0)
        self._commit(force=True)
        for partition in revoked:
            self.offsets.revoke(partition)
        self.pulling.revoked(revoked)
        with contextlib.suppress(KafkaException):  # a lost assignment may already be gone
            consumer.incremental_unassign(partitions)
        log.info(
            "partitions revoked",
            extra={
                "action": "partitions_revoked",
                "priority": self.priority,
                "partitions": sorted(revoked),
                "dropped_waiting": len(dropped),
            },
        )

    def _drain(self) -> None:
        """Stop: waiting requests are left to Kafka (uncommitted); running ones get the grace
        period; what was acknowledged is committed."""
        with self._lock:
            dropped = self.queue.drop(lambda _item: True)
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        with self._idle:
            while self.running_count > 0 and time.monotonic() < deadline:
                self._idle.wait(min(0.5, deadline - time.monotonic()))
            still_running = self.running_count
        pending = getattr(self.sink, "pending", None)
        if pending is not None:
            pending(10.0)
        self._commit(force=True)
        log.info(
            "lane stopped",
            extra={
                "action": "lane_stopped",
                "priority": self.priority,
                "dropped_waiting": len(dropped),
                "abandoned_running": still_running,
            },
        )
