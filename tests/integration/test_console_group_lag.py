"""Consumer-group lag on the real broker (`tickwheel.adapters.kafka.groups`, the console's
operations panel): a worker group that committed part of what was written is behind by exactly
the rest; a record of a transaction still open is owed to no one yet (the end is the last
stable offset) and a transaction's commit marker is no record owed; a group whose members left keeps its committed offsets and lag; and the
operations page states that lag, read through the admin client, not canned; the watchdog's
records behind its checkpoint count records too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import MemoryJobs
from tickwheel.adapters.kafka.groups import GroupLag, describe_groups
from tickwheel.clock import SystemClock
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import mount
from tickwheel.services.api.console.operations import read_operations
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
WAIT_S = 60


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in counts.items():
        for n in range(count):
            producer.produce(topic, key=b"k", value=f"r{n}".encode(), partition=partition)
    assert producer.flush(30) == 0


def joined(bootstrap: str, group: str, topic: str, partitions: int) -> Consumer:
    """A member of `group` that holds all of `topic` (polled until assigned, bounded)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "client.id": "worker-1/normal"})  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + WAIT_S
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, f"assigned within {WAIT_S} s: {consumer.assignment()}"
        consumer.poll(0.2)
    return consumer


def only(bootstrap: str, group: str) -> GroupLag:
    [found] = describe_groups(bootstrap, lambda g: g == group)
    return found


def until(read: Any, accept: Any, what: str) -> Any:
    """The first value of `read()` that `accept` takes, within WAIT_S (the coordinator answers
    a description of the group as of its last heartbeat)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = read()
        if accept(value):
            return value
        assert time.monotonic() < deadline, f"{what} within {WAIT_S} s: {value}"
        time.sleep(0.5)


@pytest.fixture
def group(applied_topology: str) -> str:
    return topic_name("tickwheel-workers")


def test_a_group_is_behind_by_what_it_has_not_committed(kafka_bootstrap: str, group: str) -> None:
    topic = topic_name("executions.normal")
    partitions = len(Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "probe"})
                     .list_topics(topic, timeout=10).topics[topic].partitions)  # fmt: skip
    produce(kafka_bootstrap, topic, {0: 10, 1: 5})
    consumer = joined(kafka_bootstrap, group, topic, partitions)
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 6), TopicPartition(topic, 1, 5)],
                        asynchronous=False)  # fmt: skip
        found = until(lambda: only(kafka_bootstrap, group),
                      lambda g: g.state == "stable" and g.members, "a stable group")  # fmt: skip
        [member] = found.members
        assert member.client_id == "worker-1/normal"
        assert sorted(member.partitions) == [(topic, p) for p in range(partitions)]
        rows = {p.partition: p for p in found.partitions}
        assert (rows[0].committed, rows[0].end, rows[0].lag) == (6, 10, 4)
        assert (rows[1].committed, rows[1].end, rows[1].lag) == (5, 5, 0)
        # Assigned, never committed and empty: owed nothing.
        assert all(rows[p].committed is None and rows[p].lag == 0 for p in range(2, partitions))
        assert (found.lag, found.uncommitted) == (4, 0)

        # Three records of a transaction still open: not yet owed to a read_committed reader.
        writer = Producer({"bootstrap.servers": kafka_bootstrap,
                           "transactional.id": f"{group}-lag-test"})  # fmt: skip
        writer.init_transactions(30)
        writer.begin_transaction()
        for n in range(3):
            writer.produce(topic, value=f"open{n}".encode(), partition=1)
        assert writer.flush(30) == 0
        assert {p.partition: p.lag for p in only(kafka_bootstrap, group).partitions}[1] == 0
        writer.commit_transaction(30)
        after = until(lambda: only(kafka_bootstrap, group),
                      lambda g: {p.partition: p.lag for p in g.partitions}[1], "the commit seen")  # fmt: skip
        # Committed: the three records are behind; the transaction's marker is not a record.
        row = {p.partition: p for p in after.partitions}[1]
        assert (row.end - row.committed, row.lag, row.exact) == (4, 3, True)
        # The group takes them (the marker is never delivered) and commits after the last one
        # it took, as a worker does: one offset short of the end, and no record owed.
        last = -1
        deadline = time.monotonic() + WAIT_S
        while last < 7:
            assert time.monotonic() < deadline, f"the 3 transactional records within {WAIT_S} s"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and message.partition() == 1:
                last = message.offset()
        consumer.commit(offsets=[TopicPartition(topic, 1, last + 1)], asynchronous=False)
        caught_up = {p.partition: p for p in only(kafka_bootstrap, group).partitions}[1]
        assert (caught_up.committed, caught_up.end, caught_up.lag) == (8, 9, 0)
    finally:
        consumer.close()

    # Every member gone: the group is empty and still owes what it never committed.
    left = until(lambda: only(kafka_bootstrap, group),
                 lambda g: not g.members, "the member's leaving seen")  # fmt: skip
    assert left.state == "empty"
    assert {p.partition: p.lag for p in left.partitions}[0] == 4


def test_the_operations_page_shows_the_worker_groups_lag_from_the_broker(
    kafka_bootstrap: str, group: str
) -> None:
    topic = topic_name("executions.high")
    queue_group = f"{group}-reports"
    produce(kafka_bootstrap, topic, {2: 7})
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": queue_group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(topic, 2, 2)], asynchronous=False)
    consumer.close()
    history = Consumer({"bootstrap.servers": kafka_bootstrap,
                        "group.id": topic_name("tickwheel-history"), "enable.auto.commit": False})  # fmt: skip
    history.commit(offsets=[TopicPartition(topic, 2, 7)], asynchronous=False)
    history.close()
    unrelated = Consumer({"bootstrap.servers": kafka_bootstrap,
                          "group.id": f"not-{group}", "enable.auto.commit": False})  # fmt: skip
    unrelated.commit(offsets=[TopicPartition(topic, 2, 0)], asynchronous=False)
    unrelated.close()

    clock = SystemClock()
    backend = Backend(jobs=MemoryJobs(clock), bootstrap=kafka_bootstrap, clock=clock)
    found = read_operations(backend)
    assert [(g["queue"], g["lag"]) for g in found.worker_groups] == [("reports", 5)]
    assert [(g["role"], g["lag"]) for g in found.service_groups] == [("history sink", 0)]

    app = FastAPI()
    app.state.backend = backend
    mount(app)
    with TestClient(app) as client:
        page = client.get("/console/operations")
    assert page.status_code == 200, page.text
    assert f'data-group="{queue_group}" data-lag="5"' in page.text
    assert "5 behind" in page.text and f"{topic}[2]: 5 (committed 2, end 7)" in page.text
    assert f"not-{group}" not in page.text


@pytest.fixture(autouse=True)
def development_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")
    yield


def test_the_watchdogs_records_behind_count_records_not_transaction_markers(
    kafka_bootstrap: str, group: str
) -> None:
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.broker_clients import KafkaPartitionReader
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.services.api.console.operations import watchdog_lag
    from tickwheel.services.watchdog.records import CHECKPOINT_KEY, checkpoint_record

    topic = topic_name("executions.events")
    writer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{group}-wd"})
    writer.init_transactions(30)
    for n in range(3):  # records at 0, 2, 4; each transaction's marker after it (end 6)
        writer.begin_transaction()
        writer.produce(topic, value=f"e{n}".encode(), partition=0)
        writer.commit_transaction(30)
    reader = KafkaPartitionReader(kafka_bootstrap, timeout=30)
    state = EventProducer(kafka_bootstrap)
    try:
        assert reader.watermarks(topic, 0)[1] == 6
        for position, behind in ((3, 1), (5, 0), (0, 3)):
            record = checkpoint_record({f"{topic}:0": position}, 1_000, 2_000)
            state.send(topic_name("watchdog.state"), CHECKPOINT_KEY, encode("Alert", record))
            state.flush()
            # Flushed (acknowledged), so the newest checkpoint on the partition is this one.
            found = watchdog_lag(reader, 3_000, kafka_bootstrap)
            assert found is not None and found["records_behind"] == behind, (position, found)
    finally:
        reader.close()
