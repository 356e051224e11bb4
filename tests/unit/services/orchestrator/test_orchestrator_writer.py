"""A partition's batch transaction on the in-memory Kafka (decision 0094): the checkpoint it
commits is the offset the batch was folded up to, however far the loop has read since it was
handed over, and it commits with the batch's events, snapshots and tombstones; a fenced
producer's batch leaves nothing visible."""

from __future__ import annotations

from typing import Any, cast

from tests.unit.services.orchestrator.test_orchestrator import _catalog
from tests.unit.services.orchestrator.test_orchestrator_pruning import ONE_STEP, T0, Feed
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.adapters.kafka.producer import TransactionalProducer
from tickwheel.clock import FakeClock
from tickwheel.core.workflow import Start, StepSucceeded
from tickwheel.services.orchestrator.partition import PartitionOrchestrator
from tickwheel.services.orchestrator.records import checkpoint_key
from tickwheel.services.orchestrator.restore import OrchestratorTopics, PartitionRuntime
from tickwheel.services.orchestrator.writer import BatchWriter, Write
from tickwheel.topology import load_topology


def setup() -> tuple[MemoryClients, OrchestratorTopics, PartitionRuntime, Feed]:
    broker = MemoryBroker(clock=FakeClock(T0 / 1000))
    broker.create_topics(load_topology())
    clients = MemoryClients(broker)
    producer = clients.transactional("tickwheel-orchestrator-p0")
    producer.init()
    partition = PartitionOrchestrator(0, 6, _catalog(ONE_STEP), retention_ms=60_000)
    runtime = PartitionRuntime(partition, cast(TransactionalProducer, producer), 0)
    return clients, OrchestratorTopics.declared(), runtime, Feed(partition)


def state_records(clients: MemoryClients, topics: OrchestratorTopics) -> dict[str, Any]:
    latest: dict[str, Any] = {}
    for record in clients.reader().read_to_end(topics.state):
        latest[record.key or ""] = (
            None if record.value is None else decode(record.value, "WorkflowSnapshot")[1]
        )
    return latest


def test_the_checkpoint_is_what_the_batch_was_folded_to_not_where_the_loop_is_now() -> None:
    clients, topics, runtime, feed = setup()
    feed.send("wf-1", Start(T0, None), ONE_STEP)
    feed.send("wf-1", StepSucceeded(T0 + 10, "a", 1))
    write = Write(runtime, runtime.orchestrator.take(), next_input=2, at_ms=T0 + 20)
    runtime.next_input = 102  # the loop read on while the transaction was in flight
    writer = BatchWriter(topics, workers=1)
    try:
        assert writer.submit(write).result().outcome == "committed"
        latest = state_records(clients, topics)
        assert latest[checkpoint_key(0)]["input_offsets"] == {topics.inputs: 2}
        assert latest["wf-1"]["status"] == "succeeded"
        events = list(clients.reader().read_to_end(topics.events))
        assert len(events) == 4  # started, scheduled, succeeded, workflow_succeeded

        runtime.orchestrator.prune_due(T0 + 10 + 60_000)
        prune = Write(runtime, runtime.orchestrator.take(), next_input=3, at_ms=T0 + 60_010)
        assert writer.submit(prune).result().outcome == "committed"
        latest = state_records(clients, topics)
        assert latest["wf-1"] is None  # the tombstone, in the checkpoint's transaction
        assert latest[checkpoint_key(0)]["input_offsets"] == {topics.inputs: 3}
    finally:
        writer.close()


def test_a_fenced_producers_batch_leaves_nothing_visible() -> None:
    clients, topics, runtime, feed = setup()
    clients.transactional("tickwheel-orchestrator-p0").init()  # a new owner fences this one
    feed.send("wf-1", Start(T0, None), ONE_STEP)
    writer = BatchWriter(topics, workers=1)
    try:
        written = writer.submit(Write(runtime, runtime.orchestrator.take(), 1, T0)).result()
    finally:
        writer.close()
    assert written.outcome == "fenced"
    assert state_records(clients, topics) == {}
    assert list(clients.reader().read_to_end(topics.events)) == []
