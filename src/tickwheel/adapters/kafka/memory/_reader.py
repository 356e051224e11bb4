"""`MemoryPartitionReader`: `read_to_end` and `watermarks` of `tickwheel.adapters.kafka.reader`,
over the in-memory broker (read_committed, no group)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tickwheel.adapters.kafka.memory._broker import MemoryBroker
from tickwheel.adapters.kafka.reader import Record, decode_key


class MemoryPartitionReader:
    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    def partition_count(self, topic: str) -> int:
        return len(self._broker.topic(topic).logs)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(low, last stable offset): a read_committed consumer's watermarks."""
        return 0, self._broker.log(topic, partition).last_stable

    def read_to_end(
        self,
        topic: str,
        partitions: list[int] | None = None,
        from_offsets: Mapping[int, int] | None = None,
    ) -> Iterator[Record]:
        """Every committed record, oldest first per partition, up to the last stable offsets
        seen at the start; from `from_offsets[partition]` instead of the beginning."""
        chosen = list(range(self.partition_count(topic))) if partitions is None else partitions
        ends = {p: self._broker.log(topic, p).last_stable for p in chosen}
        for p in chosen:
            log = self._broker.log(topic, p)
            start = max(0, (from_offsets or {}).get(p, 0))
            for entry in log.entries[start : ends[p]]:
                if not entry.visible(read_committed=True):
                    continue
                key, key_is_text = decode_key(entry.key)
                yield Record(
                    topic=topic,
                    partition=p,
                    offset=entry.offset,
                    key=key,
                    value=entry.value,
                    timestamp_ms=entry.timestamp_ms,
                    headers=entry.headers or (),
                    key_is_text=key_is_text,
                )
