"""Rebuild one orchestrator partition from Kafka: fence the previous owner (its transactional
id is the partition's), then read the partition's snapshots and checkpoint from
`workflows.state`. Runs on the restore thread (`BackgroundRestores`, shared with the timer);
the inputs partition stays paused until the result is installed. Kafka is reached through the
port (`KafkaClients`): a cluster's clients, or the in-memory broker's in the unit tier.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.dead_letters import dead_letter_of
from tickwheel.ports.kafka import KafkaClients, TransactionalWriter
from tickwheel.records import WorkflowSnapshot
from tickwheel.services.orchestrator.definitions import DefinitionCatalog
from tickwheel.services.orchestrator.partition import PartitionOrchestrator
from tickwheel.services.orchestrator.records import checkpoint_key
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.orchestrator")


@dataclass(frozen=True)
class OrchestratorTopics:
    inputs: str
    state: str
    events: str
    dlq: str

    @classmethod
    def declared(cls) -> OrchestratorTopics:
        return cls(
            topic_name("workflows.inputs"),
            topic_name("workflows.state"),
            topic_name("workflows.events"),
            topic_name("executions.dlq"),
        )


class PartitionRuntime:
    """One owned partition: its fold, its transactional producer, the next input to read."""

    def __init__(
        self,
        orchestrator: PartitionOrchestrator,
        producer: TransactionalWriter[Any],
        next_input: int,
    ) -> None:
        self.partition = orchestrator.partition
        self.orchestrator = orchestrator
        self.producer = producer
        self.next_input = next_input  # next offset of workflows.inputs to read
        self.moved = False  # inputs were read since the last checkpoint


class PartitionRestorer:
    def __init__(
        self,
        clients: KafkaClients[Any],
        topics: OrchestratorTopics,
        catalog: DefinitionCatalog,
        partitions: int,
        now_ms: Callable[[], int],
        retention_ms: int = 7 * 86_400_000,
    ) -> None:
        self.clients = clients
        self.topics = topics
        self.catalog = catalog
        # The jobs group's partition count, read at each restore (the service sets it when it
        # adopts the cluster's count): the step keys of the partitions restored from now on.
        self.partitions = partitions
        self.now_ms = now_ms
        self.retention_ms = retention_ms

    def restore(self, partition: int) -> PartitionRuntime:
        producer = self.clients.transactional(
            f"{topic_name('tickwheel-orchestrator')}-p{partition}"
        )
        # Fences the previous owner and waits out its open transaction before we read.
        producer.init()
        # No definitions read here: the service read them at start, and reads them again
        # when an input names a version it does not know.
        orchestrator = PartitionOrchestrator(
            partition, self.partitions, self.catalog, self.retention_ms
        )
        now = self.now_ms()
        next_input = 0
        reader = self.clients.reader()
        try:
            for record in reader.read_to_end(self.topics.state, [partition]):
                if record.key is None:
                    continue
                snapshot = None
                if record.value is not None:
                    try:
                        snapshot = decode_as(WorkflowSnapshot, record.value)
                    except UndecodableRecord as exc:
                        orchestrator.batch.dead_letters.append(
                            dead_letter_of(record, exc.reason, "undecodable", self.now_ms())
                        )
                        continue
                if record.key == checkpoint_key(partition):
                    offsets = snapshot["input_offsets"] if snapshot else {}
                    next_input = int(offsets.get(self.topics.inputs, 0))
                    continue
                orchestrator.load(record.key, snapshot, now)
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()
        return PartitionRuntime(orchestrator, producer, next_input)
