"""A topic partition's log as Kafka keeps it: every record and every transaction marker takes
an offset; a transaction's records sit in the log from the moment they are sent, and the last
stable offset (where `read_committed` consumers stop) waits at the first of them until the
transaction ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from confluent_kafka import KafkaError

from tickwheel.adapters.kafka.memory._errors import kafka_exception

TransactionState = Literal["open", "committed", "aborted"]
PartitionKey = tuple[str, int]


@dataclass(eq=False)
class Transaction:
    """One transaction of one producer epoch: where it wrote, and the group offsets it carries
    (committed with it, dropped with it)."""

    transactional_id: str
    epoch: int
    state: TransactionState = "open"
    deadline_ms: int = 0  # the broker aborts it when its clock reaches this
    partitions: set[PartitionKey] = field(default_factory=set)
    offsets: dict[str, dict[PartitionKey, int]] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Entry:
    """A record (`marker` False) or a transaction's commit/abort marker, at `offset`."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] | None
    timestamp_ms: int
    transaction: Transaction | None = None
    marker: bool = False

    def visible(self, read_committed: bool) -> bool:
        """Whether a consumer ever sees it (it may still have to wait for the stable offset):
        markers never; an aborted transaction's records only `read_uncommitted`."""
        if self.marker:
            return False
        aborted = self.transaction is not None and self.transaction.state == "aborted"
        return not (read_committed and aborted)


class PartitionLog:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        # The first offset each open transaction wrote here: the last stable offset waits there.
        self._open: dict[int, int] = {}

    @property
    def high(self) -> int:
        """The high watermark: the offset the next record will take."""
        return len(self.entries)

    @property
    def last_stable(self) -> int:
        return min(self._open.values(), default=self.high)

    def end(self, read_committed: bool) -> int:
        return self.last_stable if read_committed else self.high

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes], ...] | None,
        timestamp_ms: int,
        transaction: Transaction | None = None,
    ) -> int:
        offset = self.high
        if transaction is not None:
            self._open.setdefault(id(transaction), offset)
        self.entries.append(Entry(offset, key, value, headers, timestamp_ms, transaction))
        return offset

    def end_transaction(self, transaction: Transaction, timestamp_ms: int) -> None:
        """Write the transaction's marker (its state is already set) and release the stable
        offset it held."""
        self._open.pop(id(transaction), None)
        self.entries.append(
            Entry(self.high, None, None, None, timestamp_ms, transaction, marker=True)
        )


@dataclass
class Topic:
    name: str
    logs: list[PartitionLog]
    compacted: bool = False

    def log(self, partition: int) -> PartitionLog:
        if not 0 <= partition < len(self.logs):
            raise kafka_exception(
                KafkaError.UNKNOWN_TOPIC_OR_PART,
                f"Broker: Unknown topic or partition ({self.name} [{partition}])",
            )
        return self.logs[partition]
