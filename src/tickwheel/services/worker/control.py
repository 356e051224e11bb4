"""Cancellation: every worker reads `executions.control` (one partition) on its own, remembers
the most recent cancelled execution ids, and signals the handlers it is running."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.reader import watermarks
from tickwheel.clock import Clock
from tickwheel.errors import TickwheelError
from tickwheel.ports.kafka import KafkaMessage
from tickwheel.records import ExecutionControl
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.worker")


class CancelRegistry:
    """The last `capacity` cancelled execution ids (with their reasons and the highest attempt
    each cancel reaches), and the cancellation signals of the attempts running here.
    Thread-safe.

    A cancel may name an attempt: it stops that attempt and the earlier ones, never a later
    one (a workflow stops the running attempt of a step and then retries the step under the
    same `execution_id`: the retry's attempt must run). A cancel without one stops them all."""

    def __init__(self, capacity: int = 100_000) -> None:
        self.capacity = capacity
        # execution id -> (reason, the highest attempt cancelled; None: every attempt)
        self._cancelled: OrderedDict[str, tuple[str | None, int | None]] = OrderedDict()
        self._running: dict[str, dict[threading.Event, int | None]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _reaches(up_to: int | None, attempt: int | None) -> bool:
        return up_to is None or attempt is None or attempt <= up_to

    def cancel(
        self, execution_id: str, reason: str | None = None, attempt: int | None = None
    ) -> int:
        """Remember the cancellation and signal the running attempts it reaches; returns how
        many."""
        with self._lock:
            known = self._cancelled.get(execution_id)
            up_to = attempt
            if known is not None:
                up_to = None if known[1] is None or attempt is None else max(known[1], attempt)
            self._cancelled[execution_id] = (reason, up_to)
            self._cancelled.move_to_end(execution_id)
            while len(self._cancelled) > self.capacity:
                self._cancelled.popitem(last=False)
            running = self._running.get(execution_id, {})
            signals = [signal for signal, a in running.items() if self._reaches(up_to, a)]
        for signal in signals:
            signal.set()
        return len(signals)

    def is_cancelled(self, execution_id: str, attempt: int | None = None) -> bool:
        with self._lock:
            known = self._cancelled.get(execution_id)
            return known is not None and self._reaches(known[1], attempt)

    def cancelled_among(self, keys: Sequence[tuple[str, int]]) -> set[tuple[str, int]]:
        """Those of `keys` ((execution_id, attempt) each) that `is_cancelled`, under one lock
        (a lane's batch; with no cancellation known, at once)."""
        with self._lock:
            cancelled = self._cancelled
            if not cancelled:
                return set()
            reaches = self._reaches
            found = set()
            for key in keys:
                known = cancelled.get(key[0])
                if known is not None and reaches(known[1], key[1]):
                    found.add(key)
            return found

    def reason(self, execution_id: str) -> str | None:
        with self._lock:
            known = self._cancelled.get(execution_id)
            return known[0] if known is not None else None

    def started(
        self, execution_id: str, signal: threading.Event, attempt: int | None = None
    ) -> None:
        """An attempt started; a cancellation already known that reaches it signals it at
        once."""
        with self._lock:
            self._running.setdefault(execution_id, {})[signal] = attempt
            known = self._cancelled.get(execution_id)
            reached = known is not None and self._reaches(known[1], attempt)
        if reached:
            signal.set()

    def finished(self, execution_id: str, signal: threading.Event) -> None:
        with self._lock:
            signals = self._running.get(execution_id)
            if signals is not None:
                signals.pop(signal, None)
                if not signals:
                    del self._running[execution_id]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cancelled)


class ControlUnavailable(TickwheelError, RuntimeError):
    """The control topic could not be read at start-up."""


class ControlListener:
    """Reads `executions.control` without a consumer group (every worker sees every record).

    At start it goes back `lookback_s` (a worker that restarts still honours cancellations of
    requests queued while it was away) and reads up to the end before returning, so no request
    is started before the cancellations known at start-up are."""

    def __init__(
        self,
        cancels: CancelRegistry,
        clock: Clock,
        *,
        bootstrap: str,
        lookback_s: float,
        dead_letters: DeadLetterWriter,
    ) -> None:
        self.cancels = cancels
        self.clock = clock
        self.topic = topic_name("executions.control")
        self.lookback_s = lookback_s
        self.dead_letters = dead_letters
        self.received = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # No subscribe(): the group id is never joined or committed; it only satisfies the client.
        self._consumer = Consumer(
            consumer_config(
                f"{topic_name('tickwheel-worker-control')}-{uuid.uuid4().hex}",
                bootstrap,
                **{"enable.partition.eof": False},
            )
        )

    def start(self, timeout: float = 30.0) -> None:
        tp = TopicPartition(self.topic, 0)
        try:
            low, high = watermarks(self._consumer, tp)
            start = high
            if self.lookback_s > 0:
                since = int((self.clock.now() - self.lookback_s) * 1000)
                found = self._consumer.offsets_for_times([TopicPartition(self.topic, 0, since)], 10)
                start = found[0].offset if found and found[0].offset >= 0 else high
            self._consumer.assign([TopicPartition(self.topic, 0, max(start, low))])
        except KafkaException as exc:
            raise ControlUnavailable(f"cannot read {self.topic}: {exc}") from exc
        deadline = time.monotonic() + timeout
        while start < high:
            if time.monotonic() > deadline:
                raise ControlUnavailable(f"reading {self.topic} to its end took over {timeout}s")
            messages = self._consumer.consume(1000, 0.2)
            for msg in messages:
                self._handle(msg)
            position = self._consumer.position([tp])[0].offset
            if position >= high or (messages and messages[-1].offset() + 1 >= high):
                break
        log.info(
            "cancellations read",
            extra={
                "action": "control_caught_up",
                "cancelled": len(self.cancels),
                "from": start,
                "to": high,
            },
        )
        self._thread = threading.Thread(target=self._run, name="control", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for msg in self._consumer.consume(500, 0.2):
                    self._handle(msg)
            except KafkaException as exc:
                log.warning(
                    "control read failed", extra={"action": "control_error", "error": str(exc)}
                )
                self._stop.wait(1.0)

    def _handle(self, msg: KafkaMessage) -> None:
        value = msg.value()
        if msg.error() or value is None:
            return
        try:
            control = decode_as(ExecutionControl, value)
        except UndecodableRecord as exc:
            key = msg.key()
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None  # a consumed record has both
            self.dead_letters.undecodable(
                msg.topic() or "",
                partition,
                offset,
                key.decode(errors="replace") if key is not None else None,
                value,
                exc.reason,
            )
            return
        self.received += 1
        if control["kind"] == "cancel":
            signalled = self.cancels.cancel(
                control["execution_id"], control["reason"], control["attempt"]
            )
            log.info(
                "cancellation received",
                extra={
                    "action": "cancel_received",
                    "execution_id": control["execution_id"],
                    "job_id": control["job_id"],
                    "running_here": signalled,
                    "control_id": control["control_id"],
                },
            )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._consumer.close()
