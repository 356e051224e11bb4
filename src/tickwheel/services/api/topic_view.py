"""A compacted topic held in memory by the API: read to its end when opened, then followed.

The API keeps its keys and idempotency records in Kafka (nothing lost when it is killed) and
answers from memory (a request never waits on a topic read). Another instance's writes are seen
within `refresh_s`; this instance's own writes are put into the view as they are published.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode, record_name
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import TopicTail
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.api")

READ_TIMEOUT_S = 30.0
R = TypeVar("R", bound=Mapping[str, object])


class TopicView(Generic[R]):
    """`topic`'s latest record per key, decoded as a `record_type` (a `tickwheel.records`
    type; undecodable ones skipped)."""

    def __init__(
        self, topic: str, record_type: type[R], bootstrap: str | None, refresh_s: float = 2.0
    ) -> None:
        self.topic = topic_name(topic)
        self.record_type = record_type
        self.record_name = record_name(record_type)
        self.bootstrap = bootstrap
        self.refresh_s = refresh_s
        self._items: dict[str, R] = {}
        self._tail = TopicTail(self.topic, bootstrap, READ_TIMEOUT_S)
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer: EventProducer | None = None

    def refresh(self) -> None:
        """Read what was written since the last read (the whole topic the first time)."""
        with self._read_lock:
            for record in self._tail.read():
                if record.key is None or not record.key_is_text:
                    continue
                if record.value is None:
                    with self._lock:
                        self._items.pop(record.key, None)
                    continue
                try:
                    value = decode_as(self.record_type, record.value)
                except UndecodableRecord:
                    continue  # somebody else's garbage: not ours to answer with
                with self._lock:
                    self._items[record.key] = value

    def start(self) -> TopicView[R]:
        """Read the topic to its end now, then follow it on a daemon thread."""
        self.refresh()
        self._thread = threading.Thread(target=self._follow, name=f"view-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def _follow(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                self.refresh()
            except Exception as exc:  # the broker may be away: keep the view, try again
                log.warning(
                    "view refresh failed",
                    extra={
                        "action": "api_view_refresh_failed",
                        "topic": self.topic,
                        "error": str(exc),
                    },
                )

    def get(self, key: str) -> R | None:
        with self._lock:
            return self._items.get(key)

    def values(self) -> Iterator[R]:
        with self._lock:
            items = list(self._items.values())
        return iter(items)

    def publish(self, key: str, value: R) -> None:
        """Write `value` under `key`, wait for the broker's acknowledgement, and hold it."""
        with self._lock:
            if self._producer is None:
                self._producer = EventProducer(self.bootstrap)
            producer = self._producer
        # Its own acknowledgement only: a flush would wait for other requests' records too.
        producer.deliver(self.topic, key, encode(self.record_name, value))
        with self._lock:
            self._items[key] = value

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=READ_TIMEOUT_S)
