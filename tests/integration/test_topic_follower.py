"""`TopicFollower` over the real broker: a topic held in memory follows a partition added
after it started (a `tickwheel topology resize`, decision 0211) without a restart."""

from __future__ import annotations

import threading
import time

import pytest

from tickwheel.adapters.kafka.admin import add_partitions
from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.follower import TopicFollower
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import Record
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration


def test_a_record_on_a_partition_added_after_the_start_is_read(
    applied_topology: str, kafka_bootstrap: str
) -> None:
    topic = topic_name("calendars")  # one partition as declared
    seen: dict[str, Record] = {}
    lock = threading.Lock()

    def hold(record: Record) -> None:
        with lock:
            if record.key is not None:
                seen[record.key] = record

    EventProducer(kafka_bootstrap).deliver(topic, "before", b"1")
    follower = TopicFollower(
        BrokerClients(kafka_bootstrap), {topic: hold}, "test-follower", relist_s=0.5
    ).start()
    try:
        assert follower.read(follower.every(topic), lambda: sorted(seen), strict=True) == ["before"]
        add_partitions([topic], 2, kafka_bootstrap)
        key = next(f"k-{n}" for n in range(100) if partition_for(f"k-{n}", 2) == 1)
        EventProducer(kafka_bootstrap).deliver(topic, key, b"2")  # a new producer: 2 partitions
        deadline = time.monotonic() + 15
        while follower.partitions[topic] != [0, 1] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert follower.partitions[topic] == [0, 1]
        held = follower.read(follower.every(topic), lambda: seen.get(key), strict=True)
        assert held is not None and held.partition == 1 and held.value == b"2"
    finally:
        follower.close()
