"""Topics the API follows in memory with one consumer, read fresh by decision 0139's rule.

`FollowedTopics` assigns one consumer to every partition of its topics from the beginning and
hands each record to its topic's handler (on its follower thread, holding the view's
condition, so a read never sees half a batch). `read(partitions, view)` waits until the
follower has passed an end offset of each wanted partition recent enough
(`tickwheel.services.api.freshness.Freshness`) and calls `view` under the same condition.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from tickwheel.adapters.kafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    FatalClientError,
    TopicPartition,
)
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import ReadTimedOut, decode_key, watermarks
from tickwheel.services.api.freshness import Freshness

T = TypeVar("T")
CATCH_UP_S = 10.0
# A record's key as text (None: no key or not UTF-8), its partition and its value bytes.
Handler = Callable[[str | None, int, bytes | None], None]
Place = tuple[str, int]  # (topic, partition)


class FollowedTopics:
    """Every record of `handlers`' topics, given to the topic's handler as it arrives."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        bootstrap: str | None,
        window_s: float,
        catch_up_s: float = CATCH_UP_S,
    ) -> None:
        self.handlers = dict(handlers)
        self.catch_up_s = catch_up_s
        # A record answers a held fetch at once; the wait paces only idle asks (decision 0152).
        config = consumer_config(
            f"tickwheel-api-view-{uuid.uuid4()}",
            bootstrap,
            **{"enable.partition.eof": False, "fetch.wait.max.ms": 100},
        )
        self._follower = Consumer(config)
        self._meta = Consumer(config)
        self.partitions: dict[str, list[int]] = {}
        for topic in self.handlers:
            metadata = self._meta.list_topics(topic, timeout=10)
            self.partitions[topic] = sorted(metadata.topics[topic].partitions)
        self._places = [(t, p) for t, ps in self.partitions.items() for p in ps]
        self._follower.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self._places])
        self._next: dict[Place, int] = dict.fromkeys(self._places, 0)
        self.freshness: Freshness[Place] = Freshness(
            lambda place: watermarks(self._meta, TopicPartition(*place))[1], window_s
        )
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._thread = threading.Thread(target=self._follow, name="api-view", daemon=True)
        self._thread.start()

    def every(self, topic: str) -> list[Place]:
        return [(topic, p) for p in self.partitions[topic]]

    def _follow(self) -> None:
        try:
            while not self._stop.is_set():
                self._apply(self._follower.consume(5000, 0.1))
        except Exception as exc:  # reported to every read from now on
            with self._changed:
                self._failure = exc
                self._changed.notify_all()
            if isinstance(exc, FatalClientError):
                raise  # the process's to act on (decision 0200): a service exits, restarted

    def _apply(self, messages: list[Any]) -> None:
        with self._changed:
            for message in messages:
                if message.error():
                    continue
                topic, partition = message.topic(), message.partition()
                self._next[(topic, partition)] = message.offset() + 1
                key, is_text = decode_key(message.key())
                self.handlers[topic](key if is_text else None, partition, message.value())
            # Compacted gaps and transaction markers leave no record at the end offset: the
            # follower's position says it is past them.
            for tp in self._follower.position([TopicPartition(t, p) for t, p in self._places]):
                place = (tp.topic, tp.partition)
                if tp.offset >= 0:
                    self._next[place] = max(self._next[place], tp.offset)
            self._changed.notify_all()

    def read(self, places: Iterable[Place], view: Callable[[], T]) -> T:
        """`view()` once the follower has passed a recent enough end of every place."""
        ends = {place: self.freshness.end(place) for place in places}
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        deadline = time.monotonic() + self.catch_up_s
        with self._changed:
            while True:
                if self._failure is not None:
                    raise self._failure
                if all(self._next[place] >= end for place, end in ends.items()):
                    return view()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ReadTimedOut(f"following {sorted(ends)} took over {self.catch_up_s}s")
                self._changed.wait(min(left, 0.1))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._follower.close()
        self._meta.close()
