"""An in-memory Kafka shipped with tickwheel, the way procrastinate ships its in-memory
connector: a unit tier runs code written against `tickwheel.ports.kafka` without a broker.

    broker = MemoryBroker(clock=FakeClock())
    broker.create_topics(load_topology())
    clients = MemoryClients(broker)          # what BrokerClients(bootstrap) is for a cluster
    consumer = clients.consumer("timer")     # MemoryConsumer(broker, consumer_config(...))
    producer = clients.transactional("timer-0")

What it keeps of Kafka: partitions and offsets; murmur2 key placement; transactions whose
commit/abort markers take an offset; `read_committed` stopping at the last stable offset and
skipping aborted records; epochs fencing zombie producers with the client's fatal error;
offsets committed with a transaction; consumer groups with cooperative-sticky rebalances and
their callbacks run from `consume`/`poll`; pause, resume, seek, positions, watermarks; the
coordinator's transaction timeout, read from the injected clock. What it leaves out on purpose:
waiting (nothing blocks; a session ends when told: `MemoryBroker.expire_member`), compaction (the log keeps every record; `latest_per_key` reads a
compacted topic as its consumers see it), replication, quotas and sizes. The contract suite
`tests/integration/test_kafka_contract*.py` runs the same assertions here and on a real broker.
"""

from tickwheel.adapters.kafka.memory._broker import MemoryBroker
from tickwheel.adapters.kafka.memory._clients import MemoryClients
from tickwheel.adapters.kafka.memory._consumer import MemoryConsumer
from tickwheel.adapters.kafka.memory._groups import GroupMetadata
from tickwheel.adapters.kafka.memory._messages import ClusterMetadata, MemoryMessage
from tickwheel.adapters.kafka.memory._producers import (
    MemoryEventProducer,
    MemoryTransactionalProducer,
)
from tickwheel.adapters.kafka.memory._reader import MemoryPartitionReader

__all__ = [
    "ClusterMetadata",
    "GroupMetadata",
    "MemoryBroker",
    "MemoryClients",
    "MemoryConsumer",
    "MemoryEventProducer",
    "MemoryMessage",
    "MemoryPartitionReader",
    "MemoryTransactionalProducer",
]
