"""One way to hold compacted topics in memory while they are written: follow them.

`TopicFollower` assigns one consumer to every partition of its topics from the beginning and
hands each record to its topic's handler on a follower thread, holding a condition, so that a
read never sees half a batch. `read(ends, view)` waits until the follower has passed the given
end offset of each wanted partition and calls `view` under the same condition: a read sees
every write acknowledged before its end offsets were asked. A failure of the follower is
raised to every read from then on; a fatal client error is also the process's to act on
(decision 0200).

Where the end offsets come from is the reader's policy: asked now (`end`), asked once for
every caller waiting (`SharedEnds`, decision 0100), or recent enough (the API's `Freshness`,
decision 0139). The SDK's definition catalogue and the API's followed views compose it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tickwheel.adapters.kafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    FatalClientError,
    TopicPartition,
)
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import ReadTimedOut, decode_key, watermarks

T = TypeVar("T")
CATCH_UP_S = 10.0
# A record's key as text (None: no key, or not UTF-8), its partition and its value bytes.
Handler = Callable[[str | None, int, bytes | None], None]
Place = tuple[str, int]  # (topic, partition)


class TopicFollower:
    """Every record of `handlers`' topics, given to the topic's handler as it arrives."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        bootstrap: str | None,
        *,
        name: str,
        catch_up_s: float = CATCH_UP_S,
    ) -> None:
        self.handlers = dict(handlers)
        self.catch_up_s = catch_up_s
        # A record answers a held fetch at once; the wait paces only idle asks (decision 0152).
        config = consumer_config(
            f"tickwheel-{name}-{uuid.uuid4()}",
            bootstrap,
            **{"enable.partition.eof": False, "fetch.wait.max.ms": 100},
        )
        self._follower = Consumer(config)
        self._meta = Consumer(config)  # asks end offsets beside the follower's fetches
        self.partitions: dict[str, list[int]] = {}
        for topic in self.handlers:
            metadata = self._meta.list_topics(topic, timeout=10)
            self.partitions[topic] = sorted(metadata.topics[topic].partitions)
        self._places = [(t, p) for t, ps in self.partitions.items() for p in ps]
        self._follower.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self._places])
        self._next: dict[Place, int] = dict.fromkeys(self._places, 0)
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._thread = threading.Thread(target=self._follow, name=name, daemon=True)
        self._thread.start()

    def every(self, topic: str) -> list[Place]:
        return [(topic, p) for p in self.partitions[topic]]

    def end(self, place: Place) -> int:
        """Where `place` ends now, asked of the broker (outside the condition: reads ask side
        by side, not one after another)."""
        return watermarks(self._meta, TopicPartition(*place))[1]

    def read(self, ends: Mapping[Place, int], view: Callable[[], T]) -> T:
        """`view()` once the follower has passed every end offset in `ends`."""
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


class SharedEnds:
    """Where each partition ends, asked of the broker by one caller for every caller waiting:
    group commit for watermark requests (decision 0100).

    A read must see every write acknowledged before it began, so it needs an end offset asked
    *after* it arrived. A request already in flight when it arrives does not qualify; the next
    one does, and one caller asks it for everyone who arrived meanwhile. Under load that is
    one broker round trip per partition at a time instead of one per request, and no read
    waits for more than the one in flight plus its own."""

    def __init__(self, ask: Callable[[int], int]) -> None:
        self.ask = ask
        self._cond = threading.Condition()
        self._started: dict[int, int] = {}  # per partition: requests begun so far
        self._done: dict[int, int] = {}  # the latest request answered (its number)
        self._answer: dict[int, int | BaseException] = {}
        self._running: set[int] = set()

    def end(self, partition: int) -> int:
        with self._cond:
            wanted = self._started.get(partition, 0) + 1  # begun after this call arrived
            while True:
                if self._done.get(partition, 0) >= wanted:
                    known = self._answer[partition]
                    if isinstance(known, BaseException):
                        raise known
                    return known
                if partition not in self._running:
                    self._running.add(partition)
                    number = self._started[partition] = self._started.get(partition, 0) + 1
                    break
                self._cond.wait()
        answer: int | BaseException
        try:
            answer = self.ask(partition)
        except BaseException as exc:  # every caller of this round gets it
            answer = exc
        with self._cond:
            self._running.discard(partition)
            self._done[partition], self._answer[partition] = number, answer
            self._cond.notify_all()
        if isinstance(answer, BaseException):
            raise answer
        return answer
