"""Topics held in memory: read from the beginning, followed, read fresh (issue 32).

`TopicFollower` assigns one consumer (no group: nothing is ever committed) to every partition
of its topics, from the beginning or from given offsets, and hands each record to its topic's
handler on a thread of its own, holding a condition, so a view read under the same condition
never sees half a batch. It knows how far it has read each partition; `read(places, view)`
waits until it has passed an end offset of each place recent enough (decision 0139,
`Freshness`) and calls `view`. A failure on its thread is raised to every read from then on,
and a `FatalClientError` also ends the thread's run, for the process to exit (decision 0200).

Every `RELIST_S` it lists its topics again and reads a partition added since from the
beginning: a `tickwheel topology resize` (decision 0211) moves jobs to new partitions, and a
process holding `jobs.definitions` sees them without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from tickwheel.adapters.kafka.fatal import FatalClientError
from tickwheel.adapters.kafka.freshness import Freshness
from tickwheel.adapters.kafka.reader import ReadTimedOut, Record, decode_key, watermarks
from tickwheel.ports.kafka import KafkaClients, KafkaMessage

log = logging.getLogger("tickwheel.kafka")

T = TypeVar("T")
CATCH_UP_S = 10.0
RELIST_S = 10.0  # how soon a partition added to a followed topic is read
Place = tuple[str, int]  # (topic, partition)
Handler = Callable[[Record], object]


class TopicFollower:
    """Every record of `handlers`' topics, given to the topic's handler as it arrives."""

    def __init__(
        self,
        clients: KafkaClients[Any],
        handlers: Mapping[str, Handler],
        name: str,
        window_s: float = 0.0,
        catch_up_s: float = CATCH_UP_S,
        monotonic: Callable[[], float] = time.monotonic,
        relist_s: float = RELIST_S,
    ) -> None:
        self.clients = clients
        self.handlers = dict(handlers)
        self.name = name
        self.catch_up_s = catch_up_s
        self.relist_s = relist_s
        # A record answers a held fetch at once; the wait paces only idle asks (decision 0152).
        overrides = {"enable.partition.eof": False, "fetch.wait.max.ms": 100}
        self._consumer = clients.consumer(f"tickwheel-{name}-{uuid.uuid4()}", **overrides)
        self._meta = clients.consumer(f"tickwheel-{name}-ends-{uuid.uuid4()}", **overrides)
        self.partitions: dict[str, list[int]] = {topic: [] for topic in self.handlers}
        self._next: dict[Place, int] = {}
        self.freshness: Freshness[Place] = Freshness(
            lambda place: watermarks(cast(Any, self._meta), TopicPartition(*place))[1],
            window_s,
            monotonic,
        )
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._thread: threading.Thread | None = None

    def start(self, starts: Mapping[Place, int] | None = None) -> TopicFollower:
        """List the topics' partitions and follow them on a daemon thread, each from
        `starts[place]` where given, else from its beginning."""
        self._assign_new(starts or {})
        self._thread = threading.Thread(target=self._follow, name=self.name, daemon=True)
        self._thread.start()
        return self

    def every(self, topic: str) -> list[Place]:
        return [(topic, p) for p in self.partitions[topic]]

    def _assign_new(self, starts: Mapping[Place, int]) -> None:
        """Assign the partitions of the followed topics not assigned yet."""
        added = []
        for topic in self.handlers:
            metadata = self._consumer.list_topics(topic, timeout=10)
            known = set(self.partitions[topic])
            added += [
                (topic, p) for p in sorted(metadata.topics[topic].partitions) if p not in known
            ]
        if not added:
            return
        with self._changed:
            for topic, partition in added:
                self._next[(topic, partition)] = max(0, starts.get((topic, partition), 0))
                self.partitions[topic] = sorted([*self.partitions[topic], partition])
        at = [TopicPartition(*place, starts.get(place, OFFSET_BEGINNING)) for place in added]
        self._consumer.incremental_assign(at)
        if self._thread is not None:
            log.info(
                "followed topic grew",
                extra={
                    "action": "follower_partitions_added",
                    "follower": self.name,
                    "partitions": [list(place) for place in added],
                },
            )

    def _follow(self) -> None:
        relist_at = time.monotonic() + self.relist_s
        try:
            while not self._stop.is_set():
                self._apply(self._consumer.consume(5000, 0.1))
                if time.monotonic() >= relist_at:
                    relist_at = time.monotonic() + self.relist_s
                    self._relist()
        except Exception as exc:  # reported to every read from now on
            with self._changed:
                self._failure = exc
                self._changed.notify_all()
            if isinstance(exc, FatalClientError):
                raise  # the process's to act on (decision 0200): a service exits, restarted

    def _relist(self) -> None:
        try:
            self._assign_new({})
        except Exception as exc:  # the broker may be away: the next turn asks again
            log.warning(
                "listing a followed topic failed",
                extra={
                    "action": "follower_relist_failed",
                    "follower": self.name,
                    "error": str(exc),
                },
            )

    def _apply(self, messages: Iterable[KafkaMessage]) -> None:
        with self._changed:
            for message in messages:
                if message.error():
                    continue
                topic, partition, offset = (
                    message.topic() or "",
                    message.partition() or 0,
                    message.offset() or 0,
                )
                self._next[(topic, partition)] = offset + 1
                key, is_text = decode_key(message.key())
                self.handlers[topic](
                    Record(
                        topic,
                        partition,
                        offset,
                        key,
                        message.value(),
                        message.timestamp()[1],
                        (),
                        is_text,
                    )
                )
            # Compacted gaps and transaction markers leave no record at the end offset: the
            # follower's position says it is past them.
            for tp in self._consumer.position([TopicPartition(*place) for place in self._next]):
                place = (tp.topic, tp.partition)
                if tp.offset >= 0:
                    self._next[place] = max(self._next[place], tp.offset)
            self._changed.notify_all()

    def read(
        self,
        places: Iterable[Place],
        view: Callable[[], T],
        strict: bool = False,
        within_s: float | None = None,
    ) -> T:
        """`view()` once the follower has passed a recent enough end of every place (with
        `strict`, an end asked after this call began, whatever the window)."""
        end_of = self.freshness.strict_end if strict else self.freshness.end
        # Asked outside the condition: reads wait on the broker side by side.
        ends = {place: end_of(place) for place in places}
        within_s = self.catch_up_s if within_s is None else within_s
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        deadline = time.monotonic() + within_s
        with self._changed:
            while True:
                if self._failure is not None:
                    raise self._failure
                if all(self._next.get(place, 0) >= end for place, end in ends.items()):
                    return view()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ReadTimedOut(f"following {sorted(ends)} took over {within_s}s")
                self._changed.wait(min(left, 0.1))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._consumer.close()
        self._meta.close()
