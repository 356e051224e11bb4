"""The record of partition-count changes (`topology.changes`) and the declaration it amends.

`topology/topics.toml` declares the count a co-partition group starts with; a resize recorded
here is the count it has now (decision 0211). Every service reads it at start, through
`verify_topology`: it refuses to start while a resize is under way, and takes the count of the
last one done.
"""

from __future__ import annotations

from confluent_kafka import KafkaException

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.records import TopologyChange
from tickwheel.topology import CHANGES_TOPIC, TopicSpec, topic_name, with_group_partitions


def read_changes(bootstrap: str | None = None) -> dict[str, TopologyChange]:
    """The latest change per co-partition group; none on a cluster without the topic (the
    topology check then says it is missing)."""
    changes: dict[str, TopologyChange] = {}
    try:
        records = list(read_to_end(topic_name(CHANGES_TOPIC), None, bootstrap))
    except KafkaException:
        return changes
    for record in records:
        if record.key is None:
            continue
        if record.value is None:
            changes.pop(record.key, None)
            continue
        try:
            changes[record.key] = decode_as(TopologyChange, record.value)
        except UndecodableRecord:
            continue  # not ours to judge here; nothing else writes the topic
    return changes


def amended(
    specs: list[TopicSpec], changes: dict[str, TopologyChange]
) -> tuple[list[TopicSpec], list[str]]:
    """The declaration as the cluster's recorded changes leave it, and one line per change
    still under way (no service may start in the middle of one)."""
    problems = []
    for group, change in sorted(changes.items()):
        if change["state"] == "done":
            specs = with_group_partitions(specs, group, change["to_partitions"])
            continue
        problems.append(
            f"co-partitioned group {group!r} is being resized from {change['from_partitions']} "
            f"to {change['to_partitions']} partitions; finish it with `tickwheel topology "
            f"resize --partitions {change['to_partitions']}`"
        )
    return specs, problems


def record_change(change: TopologyChange, bootstrap: str | None = None) -> None:
    """Write `change` under its group, acknowledged by every in-sync copy."""
    producer = EventProducer(bootstrap)
    value = encode("TopologyChange", change)
    producer.send(topic_name(CHANGES_TOPIC), change["group"], value)
    producer.flush()
