"""A compacted topic held in memory by the API: read to its end when opened, then followed.

The API keeps its keys and idempotency records in Kafka (nothing lost when it is killed) and
answers from memory (a request never waits on a topic read). Another instance's writes are
seen as soon as the `TopicFollower` reads them; this instance's own writes are put into the
view as they are published.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode, record_name
from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.follower import TopicFollower
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import Record
from tickwheel.topology import topic_name

READ_TIMEOUT_S = 30.0
R = TypeVar("R", bound=Mapping[str, object])


class TopicView(Generic[R]):
    """`topic`'s latest record per key, decoded as a `record_type` (a `tickwheel.records`
    type; undecodable ones skipped)."""

    def __init__(self, topic: str, record_type: type[R], bootstrap: str | None) -> None:
        self.topic = topic_name(topic)
        self.record_type = record_type
        self.record_name = record_name(record_type)
        self.bootstrap = bootstrap
        self._items: dict[str, R] = {}
        self._lock = threading.Lock()
        self._follower: TopicFollower | None = None
        self._producer: EventProducer | None = None

    def _hold(self, record: Record) -> None:
        if record.key is None or not record.key_is_text:
            return
        if record.value is None:
            with self._lock:
                self._items.pop(record.key, None)
            return
        try:
            value = decode_as(self.record_type, record.value)
        except UndecodableRecord:
            return  # somebody else's garbage: not ours to answer with
        with self._lock:
            self._items[record.key] = value

    def refresh(self) -> None:
        """Wait until every record written before this call is in the view (following the
        topic from now on, if it was not followed yet)."""
        with self._lock:
            if self._follower is None:
                clients = BrokerClients(self.bootstrap)
                follower = TopicFollower(clients, {self.topic: self._hold}, f"view-{self.topic}")
                self._follower = follower.start()
            follower = self._follower
        follower.read(follower.every(self.topic), lambda: None, True, READ_TIMEOUT_S)

    def start(self) -> TopicView[R]:
        """Read the topic to its end now, then follow it on a daemon thread."""
        self.refresh()
        return self

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
        if self._follower is not None:
            self._follower.close()
