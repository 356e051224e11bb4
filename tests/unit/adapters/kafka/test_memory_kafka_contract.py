"""The Kafka port's contract suite (`tests/integration/test_kafka_contract*.py`), run here
against the in-memory broker: the very same test functions, given a memory `cluster`."""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration import test_kafka_contract as producers
from tests.integration import test_kafka_contract_consumers as consumers
from tests.integration.test_kafka_contract import (
    test_a_key_lands_on_its_murmur2_partition,
    test_a_new_producer_with_the_same_transactional_id_fences_the_zombie,
    test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_fenced,
    test_a_transaction_over_two_topics_is_all_or_nothing_with_its_headers,
    test_each_partition_is_consumed_in_the_order_it_was_produced,
    test_offsets_sent_to_a_transaction_commit_with_it_and_not_without,
    test_read_committed_hides_open_and_aborted_transactions,
)
from tests.integration.test_kafka_contract_consumers import (
    test_a_compacted_topic_reads_as_the_latest_record_per_key,
    test_a_member_that_stops_polling_loses_its_partitions_to_the_others,
    test_a_second_member_takes_partitions_revoked_before_they_are_assigned,
    test_an_unknown_topic_is_reported_and_the_consumer_goes_on,
    test_committed_offsets_are_where_the_group_starts,
    test_pause_seek_and_position,
    test_topics_are_listed_with_their_partitions_and_unknown_ones_with_an_error,
    test_watermarks_and_the_last_stable_offset,
)
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.memory import (
    MemoryBroker,
    MemoryClients,
    MemoryConsumer,
    MemoryEventProducer,
    MemoryPartitionReader,
    MemoryTransactionalProducer,
)
from tickwheel.clock import FakeClock

CONTRACT = [
    test_a_compacted_topic_reads_as_the_latest_record_per_key,
    test_a_key_lands_on_its_murmur2_partition,
    test_a_new_producer_with_the_same_transactional_id_fences_the_zombie,
    test_a_member_that_stops_polling_loses_its_partitions_to_the_others,
    test_a_second_member_takes_partitions_revoked_before_they_are_assigned,
    test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_fenced,
    test_a_transaction_over_two_topics_is_all_or_nothing_with_its_headers,
    test_an_unknown_topic_is_reported_and_the_consumer_goes_on,
    test_committed_offsets_are_where_the_group_starts,
    test_each_partition_is_consumed_in_the_order_it_was_produced,
    test_offsets_sent_to_a_transaction_commit_with_it_and_not_without,
    test_pause_seek_and_position,
    test_read_committed_hides_open_and_aborted_transactions,
    test_topics_are_listed_with_their_partitions_and_unknown_ones_with_an_error,
    test_watermarks_and_the_last_stable_offset,
]


class MemoryCluster:
    """The in-memory broker through the clients code gets from it (`MemoryClients`)."""

    kind = "memory"

    def __init__(self) -> None:
        # A clock that starts at the wall clock's time (the contract compares record times
        # with it, as the real broker stamps them) and moves only when told to.
        self.clock = FakeClock(start=time.time())
        self.broker = MemoryBroker(clock=self.clock)
        self.clients = MemoryClients(self.broker)

    def create_topic(self, name: str, partitions: int = 1, compacted: bool = False) -> None:
        self.broker.create_topic(name, partitions, compacted)

    def consumer(self, group: str, **overrides: Any) -> MemoryConsumer:
        return self.clients.consumer(group, **overrides)

    def lapsing_consumer(self, group: str) -> MemoryConsumer:
        return self.consumer(group)

    def lapse(self, consumer: MemoryConsumer) -> None:
        """No clock runs here: the session's end is told to the broker."""
        self.broker.expire_member(consumer.consumer_group_metadata().group_id, consumer.memberid())

    def producer(self) -> MemoryEventProducer:
        return self.clients.events()

    def transactional(self, transactional_id: str, **overrides: Any) -> MemoryTransactionalProducer:
        return self.clients.transactional(transactional_id, **overrides)

    def let_time_pass(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def reader(self) -> MemoryPartitionReader:
        return self.clients.reader()


@pytest.fixture
def cluster() -> Iterator[MemoryCluster]:
    yield MemoryCluster()


def test_every_contract_test_runs_against_the_memory_broker_too() -> None:
    defined = {
        name
        for module in (producers, consumers)
        for name, _ in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("test_") and _.__module__ == module.__name__
    }
    assert defined == {f.__name__ for f in CONTRACT}


def test_the_contract_suite_would_catch_a_consumer_that_ignores_isolation() -> None:
    """A control: the contract fails on a consumer that reads uncommitted records while
    claiming read_committed, so a pass above means something."""

    class Leaky(MemoryCluster):
        def consumer(self, group: str, **overrides: Any) -> MemoryConsumer:
            return MemoryConsumer(
                self.broker,
                consumer_config(
                    group, "memory", **{**overrides, "isolation.level": "read_uncommitted"}
                ),
            )

    with pytest.raises(AssertionError):
        test_read_committed_hides_open_and_aborted_transactions(Leaky())
