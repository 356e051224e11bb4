"""The history sink on the in-memory fakes (issue 10, item 4): its consume → insert → commit
loop on `tickwheel.adapters.kafka.memory` into `tickwheel.history.memory.MemoryHistoryStore`,
in seconds. Every record lands once in its table (a request also as its `requested` event), a
bad record is dead-lettered and the loop goes on, offsets are committed only after the
insert, and a crash between insert and commit leaves no duplicate as read back. The
real-broker, real-chDB tests (`tests/integration/test_history_sink*.py`,
`tests/chaos/test_history_sink_crash.py`) stay as they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryConsumer, MemoryEventProducer
from tickwheel.clock import FakeClock
from tickwheel.history.memory import MemoryHistoryStore
from tickwheel.ports.history import HistoryStoreError
from tickwheel.services.history.sink import HistorySink
from tickwheel.topology import load_topology, topic_name

T0_MS = 4_076_000_000_000
GROUP = "history-unit"
MAX_STEPS = 200  # every loop below is bounded in turns; each turn returns at once


class DeadLetterList:
    """The sink's dead-letter port, kept in a list."""

    def __init__(self) -> None:
        self.letters: list[dict[str, Any]] = []

    def undecodable(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: str | None,
        raw: bytes | None,
        reason: str,
        kind: str = "undecodable",
    ) -> None:
        self.letters.append({"topic": topic, "offset": offset, "reason": reason, "kind": kind})


class Crash(BaseException):
    """The process dying between the insert and the commit (not an error the sink handles)."""


def _request(n: int) -> dict[str, Any]:
    at = T0_MS + n * 1000
    return {
        "execution_id": f"exec-{n}", "job_id": f"job-{n % 3}", "job_version": 1,
        "job_type": "noop", "tenant_id": "acme", "priority": "normal", "attempt": 1,
        "scheduled_time": at, "fire_time": at + 10, "period_start": at - 60_000,
        "period_end": at, "payload": "{}", "max_attempts": 3, "trigger": "scheduled",
        "late": False, "requested_at": at + 5, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip


def _event(n: int, kind: str) -> dict[str, Any]:
    at = T0_MS + n * 1000
    return {
        "event_id": f"{kind}:exec-{n}:1:w-1", "event_time": at + 20, "event_type": kind,
        "job_id": f"job-{n % 3}", "job_type": "noop", "tenant_id": "acme",
        "execution_id": f"exec-{n}", "attempt": 1, "scheduled_time": at, "fire_time": at + 10,
        "worker_id": "w-1", "lease_deadline": None, "error": None, "error_kind": None,
        "reason": None, "details": None,
    }  # fmt: skip


class World:
    """A memory broker with tickwheel's topics, `executions` executions' records on it (a
    request and its `leased` and `succeeded` events each), one undecodable record, and a
    shared store."""

    def __init__(self, executions: int = 30) -> None:
        self.broker = MemoryBroker(clock=FakeClock(T0_MS / 1000))
        self.broker.create_topics(load_topology())
        self.store = MemoryHistoryStore()
        self.dead_letters = DeadLetterList()
        self.executions = executions
        producer = MemoryEventProducer(self.broker)
        for n in range(executions):
            request = encode("ExecutionRequest", _request(n))
            producer.send(topic_name("executions.normal"), f"job-{n % 3}", request)
            for kind in ("leased", "succeeded"):
                event = encode("ExecutionEvent", _event(n, kind))
                producer.send(topic_name("executions.events"), f"job-{n % 3}", event)
        producer.send(topic_name("executions.events"), "job-x", b"not avro at all")
        self.records = executions * 3 + 1

    def sink(self, max_batch: int = 10_000, **options: Any) -> tuple[HistorySink, MemoryConsumer]:
        consumer = MemoryConsumer(self.broker, consumer_config(GROUP, "memory"))
        # A long batch wait costs nothing here (the in-memory consumer never blocks: a batch
        # ends when nothing more is there) and keeps the cut independent of the machine's load.
        sink = HistorySink(self.store, consumer, self.dead_letters,
                           max_batch=max_batch, max_wait_s=30.0, **options)  # fmt: skip
        sink.subscribe()
        return sink, consumer

    def crash_then_redrain(
        self, recut: bool, pipelined: bool = False, inserted: Callable[[], bool] | None = None
    ) -> None:
        """A sink dies between its insert and its commit (`inserted`, if given, says its rows
        are in the store); its session ends and a second sink in the group reads everything
        again, cut the same way or (`recut`) in batches of 7."""

        def crash(_inserts: int) -> None:
            raise Crash

        first, first_consumer = self.sink(after_insert=crash, pipelined=pipelined)
        with pytest.raises(Crash):
            _drain(first, self.records)
            first.finish()  # pipelined: the insert thread's crash surfaces where it commits
        assert inserted is None or inserted()
        assert self.committed(first_consumer) > 0  # inserted, not committed
        self.broker.expire_member(GROUP, first_consumer.memberid())
        second, second_consumer = self.sink(max_batch=7 if recut else 10_000)
        _drain(second, self.records)
        assert self.committed(second_consumer) == 0

    def committed(self, consumer: MemoryConsumer) -> int:
        """Records behind the group's committed offsets, over the topics written here."""
        partitions = [
            TopicPartition(topic, p)
            for topic in (topic_name("executions.normal"), topic_name("executions.events"))
            for p in range(len(self.broker.topic(topic).logs))
        ]
        behind = 0
        for tp in consumer.committed(partitions):
            _low, high = consumer.get_watermark_offsets(tp)
            behind += high - max(tp.offset, 0)
        return behind


def _drain(sink: HistorySink, records: int) -> None:
    for _ in range(MAX_STEPS):
        if sink.stats.records >= records:
            return
        sink.step(idle_timeout_s=0)
    raise AssertionError(f"the sink read {sink.stats.records} of {records} records")


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(str(row["event_id"]) for row in rows)


def test_every_record_lands_once_and_a_bad_one_is_dead_lettered() -> None:
    world = World()
    sink, consumer = world.sink()
    _drain(sink, world.records)
    n = world.executions
    assert len(world.store.rows("execution_requests")) == n
    events = world.store.rows("execution_events")
    assert len(events) == 3 * n == len(set(_ids(events)))  # requested, leased, succeeded
    assert sum(row["event_type"] == "requested" for row in events) == n
    assert [letter["topic"] for letter in world.dead_letters.letters] == [
        topic_name("executions.events")
    ]
    assert world.dead_letters.letters[0]["kind"] == "undecodable"
    assert world.committed(consumer) == 0
    assert sink.stats.lag_records == 0


def test_offsets_are_committed_only_after_the_insert() -> None:
    world = World()
    committed_at_insert: list[int] = []
    consumers: list[MemoryConsumer] = []
    sink, consumer = world.sink(after_insert=lambda _n: committed_at_insert.append(
        world.committed(consumers[0])))  # fmt: skip
    consumers.append(consumer)
    _drain(sink, world.records)
    # When each batch's rows were in the store, its offsets were not committed yet.
    assert committed_at_insert and all(behind > 0 for behind in committed_at_insert)
    assert world.committed(consumer) == 0


@pytest.mark.parametrize("pipelined", [False, True], ids=["inline", "pipelined"])
@pytest.mark.parametrize("recut", [False, True], ids=["same-cut", "cut-differently"])
def test_a_crash_between_insert_and_commit_leaves_no_duplicate_as_read_back(
    recut: bool, pipelined: bool
) -> None:
    world = World()
    world.crash_then_redrain(recut, pipelined, lambda: bool(world.store.rows("execution_events")))
    n = world.executions
    for table, expected in (("execution_requests", n), ("execution_events", 3 * n)):
        final = world.store.final(table)
        assert len(final) == expected == len(set(_ids(final))), table
        raw = world.store.rows(table)
        if recut:
            # Other cuts, other tokens: copies are stored, and FINAL (here `final`) folds them.
            assert len(raw) > expected
        else:
            # The same cut again: the same tokens, so the repeat never lands.
            assert _ids(raw) == _ids(final), table


def _stored_records(world: World) -> int:
    """Records whose rows are in the store (a request's two rows count once), plus the
    dead-lettered ones."""
    places = {
        (row["source_topic"], row["source_partition"], row["source_offset"])
        for table in ("execution_requests", "execution_events")
        for row in world.store.rows(table)
    }
    return len(places) + len(world.dead_letters.letters)


def test_a_pipelined_sink_commits_each_batch_only_after_its_insert() -> None:
    world = World()
    sink, consumer = world.sink(max_batch=10, pipelined=True)
    sink.step(idle_timeout_s=0)
    # The first batch's insert was started, not waited for: nothing is committed yet.
    assert world.committed(consumer) == world.records
    for _ in range(MAX_STEPS):
        if sink.stats.records >= world.records:
            break
        sink.step(idle_timeout_s=0)
        # A commit follows its insert: never more records committed than stored.
        assert world.records - world.committed(consumer) <= _stored_records(world)
    sink.finish()
    assert world.committed(consumer) == 0
    n = world.executions
    assert len(world.store.rows("execution_requests")) == n
    events = world.store.rows("execution_events")
    assert len(events) == 3 * n == len(set(_ids(events)))
    assert sink.stats.lag_records == 0


class RefusingStore(MemoryHistoryStore):
    """A store whose every insert fails (a ClickHouse that is down)."""

    def insert(self, table: str, rows: Any, dedup_token: str | None = None) -> None:
        raise HistoryStoreError(f"insert into {table} failed: the store is down")


def test_a_pipelined_insert_that_fails_raises_and_commits_nothing() -> None:
    world = World()
    world.store = RefusingStore()
    sink, consumer = world.sink(pipelined=True, sleep=lambda _s: None)
    sink.step(idle_timeout_s=0)
    with pytest.raises(HistoryStoreError):
        sink.finish()
    assert world.committed(consumer) == world.records
