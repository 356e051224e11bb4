"""Both Kafka implementations satisfy the port's Protocols, as mypy sees them: the real client
(with confluent-kafka's own type stubs, which the project's mypy run skips) and the in-memory
one. mypy runs on a small module that assigns each implementation to its protocol; a control
proves the check can fail."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from mypy import api

from tickwheel.adapters.kafka.memory import MemoryConsumer
from tickwheel.ports.kafka import GroupConsumer

ROOT = Path(__file__).resolve().parents[4]

CONFORMANCE = """
from confluent_kafka import Consumer, Message, TopicPartition

from tickwheel.adapters.kafka.memory import (
    MemoryClients,
    MemoryConsumer,
    MemoryEventProducer,
    MemoryMessage,
    MemoryPartitionReader,
    MemoryTransactionalProducer,
)
from tickwheel.adapters.kafka.broker_clients import BrokerClients, KafkaPartitionReader
from tickwheel.adapters.kafka.producer import EventProducer, TransactionalProducer
from tickwheel.ports.kafka import (
    EventWriter,
    GroupConsumer,
    KafkaClients,
    KafkaMessage,
    PartitionReader,
    TransactionalWriter,
)


def the_real_client(
    consumer: Consumer,
    writer: TransactionalProducer,
    events: EventProducer,
    reader: KafkaPartitionReader,
    message: Message,
    clients: BrokerClients,
) -> None:
    as_consumer: GroupConsumer[TopicPartition] = consumer
    as_writer: TransactionalWriter[TopicPartition] = writer
    as_events: EventWriter = events
    as_reader: PartitionReader = reader
    as_message: KafkaMessage = message
    as_clients: KafkaClients[TopicPartition] = clients


def the_memory_client(
    consumer: MemoryConsumer,
    writer: MemoryTransactionalProducer,
    events: MemoryEventProducer,
    reader: MemoryPartitionReader,
    message: MemoryMessage,
    clients: MemoryClients,
) -> None:
    as_consumer: GroupConsumer[TopicPartition] = consumer
    as_writer: TransactionalWriter[TopicPartition] = writer
    as_events: EventWriter = events
    as_reader: PartitionReader = reader
    as_message: KafkaMessage = message
    as_clients: KafkaClients[TopicPartition] = clients
"""

# A consumer that forgot `seek` and takes `pause` with the wrong type: must be refused.
BROKEN = """
from confluent_kafka import TopicPartition

from tickwheel.adapters.kafka.memory import MemoryConsumer
from tickwheel.ports.kafka import GroupConsumer


class Forgetful(MemoryConsumer):
    seek = None  # type: ignore[assignment]

    def pause(self, partitions: int) -> None:  # type: ignore[override]
        return None


def check(consumer: Forgetful) -> None:
    as_consumer: GroupConsumer[TopicPartition] = consumer
"""


def _mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    module = tmp_path / "kafka_port_conformance.py"
    module.write_text(textwrap.dedent(source))
    config = tmp_path / "mypy.ini"
    # The project's settings, except that confluent-kafka's stubs are read (the project skips
    # them), and errors inside imported modules are not this test's business.
    config.write_text(
        "[mypy]\npython_version = 3.11\nignore_missing_imports = True\n"
        "follow_imports = silent\nwarn_unused_ignores = False\n"
        f"mypy_path = {ROOT / 'src'}\n"
    )
    cache = ROOT / ".mypy_cache" / "kafka-port-conformance"
    out, err, status = api.run(
        ["--config-file", str(config), "--cache-dir", str(cache), str(module)]
    )
    return out + err, status


def test_both_implementations_satisfy_every_kafka_protocol(tmp_path: Path) -> None:
    report, status = _mypy(tmp_path, CONFORMANCE)
    assert status == 0, report


def test_a_consumer_missing_a_method_is_refused(tmp_path: Path) -> None:
    report, status = _mypy(tmp_path, BROKEN)
    assert status == 1, report
    assert 'incompatible type "Forgetful"' in report or "Incompatible types" in report, report
    assert "seek" in report and "pause" in report, report


# `consumer.seek(`, `self._consumer.pause(`, `self.probe.close(`: what the code calls on a consumer.
CONSUMER_CALL = re.compile(r"\b(?:self\.)?_?(?:consumer|probe)\.([a-z_]+)\(")
CALLERS = ("services", "sdk", "history", "cli", "streams")


def test_the_port_has_every_consumer_method_the_services_call() -> None:
    """The services still hold confluent-kafka consumers; when one starts calling a method the
    port lacks, this says so before the move onto the port (or the fake) finds out."""
    port = {name for name in dir(GroupConsumer) if not name.startswith("_")}
    called: dict[str, set[str]] = {}
    for package in CALLERS:
        for path in sorted((ROOT / "src" / "tickwheel" / package).rglob("*.py")):
            for method in CONSUMER_CALL.findall(path.read_text()):
                called.setdefault(method, set()).add(str(path.relative_to(ROOT)))
    assert called, "the pattern finds no consumer call at all: it has gone stale"
    missing = {m: sorted(paths) for m, paths in called.items() if m not in port}
    assert missing == {}, f"called on consumers but not in GroupConsumer: {missing}"
    assert all(hasattr(MemoryConsumer, m) for m in port)
