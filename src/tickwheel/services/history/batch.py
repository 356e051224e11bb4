"""What the history sink has read since its last commit: rows grouped by table, frames of
records for the fast path (decision 0123), and the offsets they span."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.services.history.columnar import EncodedKind, Frame
from tickwheel.services.history.rows import Row

PartitionKey = tuple[str, int]


def _ranges_text(ranges: Mapping[PartitionKey, tuple[int, int]]) -> str:
    return ";".join(f"{t}/{p}/{a}-{b}" for (t, p), (a, b) in sorted(ranges.items()))


@dataclass
class Batch:
    """Records read since the last commit, grouped by table, with the offsets they span."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    # Every record read, decodable or not: what the commit moves past.
    offsets: dict[PartitionKey, tuple[int, int]] = field(default_factory=dict)
    # Per table, the ranges of the records it holds: what its dedup token names.
    table_ranges: dict[str, dict[PartitionKey, tuple[int, int]]] = field(default_factory=dict)
    # Records for the fast path, by record kind: kept whole, decoded by ClickHouse.
    frames: dict[str, Frame] = field(default_factory=dict)
    size: int = 0
    newest_ms: int = 0  # the newest Kafka timestamp among its records

    @staticmethod
    def _widen(ranges: dict[PartitionKey, tuple[int, int]], key: PartitionKey, offset: int) -> None:
        # Twice per record: comparisons, not min/max calls (offsets mostly arrive in order).
        span = ranges.get(key)
        if span is None:
            ranges[key] = (offset, offset)
        elif offset > span[1]:
            ranges[key] = (span[0], offset)
        elif offset < span[0]:
            ranges[key] = (offset, span[1])

    def note(self, topic: str, partition: int, offset: int) -> None:
        self._widen(self.offsets, (topic, partition), offset)
        self.size += 1

    def add(self, table: str, row: Row) -> None:
        self.rows.setdefault(table, []).append(row)
        key = (row["source_topic"], row["source_partition"])
        self._widen(self.table_ranges.setdefault(table, {}), key, row["source_offset"])

    def add_encoded(
        self,
        kind: EncodedKind,
        message: Any,
        value: bytes,
        topic: str,
        partition: int,
        offset: int,
    ) -> None:
        frame = self.frames.get(kind.schema)
        if frame is None:
            frame = self.frames[kind.schema] = Frame(kind)
        frame.add(message, value, topic, partition, offset)

    def drop(self, partitions: Iterable[PartitionKey]) -> int:
        """Forget the records of revoked partitions (their new owner reads them again)."""
        gone = set(partitions)
        dropped = 0
        for schema, frame in list(self.frames.items()):
            kept = [m for m in frame.messages if (m.topic(), m.partition()) not in gone]
            dropped += len(frame.messages) - len(kept)
            if kept:
                frame.keep(kept)
            else:
                del self.frames[schema]
        for key in gone & set(self.offsets):
            del self.offsets[key]
        for table, table_rows in list(self.rows.items()):
            kept = [r for r in table_rows if (r["source_topic"], r["source_partition"]) not in gone]
            dropped += len(table_rows) - len(kept)
            if kept:
                self.rows[table] = kept
            else:
                del self.rows[table]
            ranges = self.table_ranges.get(table, {})
            for key in gone & set(ranges):
                del ranges[key]
        return dropped

    def dedup_token(self, table: str) -> str:
        """The insert deduplication token of `table`'s rows: a digest of their offset ranges
        and of the rows' event ids. The same records delivered again give the same token; a
        topic recreated from scratch (offsets reused by different records) does not."""
        digest = hashlib.sha256(
            f"{table}|{_ranges_text(self.table_ranges.get(table, {}))}".encode()
        )
        for row in self.rows.get(table, []):
            digest.update(b"|")
            digest.update(str(row.get("event_id", "")).encode())
        return f"tickwheel-history:{table}:{digest.hexdigest()[:40]}"

    def commit_offsets(self) -> list[TopicPartition]:
        return [TopicPartition(t, p, last + 1) for (t, p), (_first, last) in self.offsets.items()]
