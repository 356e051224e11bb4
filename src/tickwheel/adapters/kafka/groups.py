"""Consumer groups as plain values: who is in a group, what each member holds, and how far the
group's committed offsets stand behind the end of each partition it reads (its lag).

The admin client's own description objects (`ConsumerGroupDescription`, `MemberDescription`,
futures) stay in this module, so a caller (the console's operations panel) gets typed values
it can test without a broker, and nothing outside `tickwheel.adapters.kafka` touches the client.

The end of a partition is its last stable offset (`read_committed`): every tickwheel consumer
reads committed records only, so a record of an open transaction is not yet owed to anyone.
Lag counts records, not offsets: a transaction's commit marker takes an offset that no consumer
is ever given, so a group that has read everything a transactional writer wrote stands one
offset short of the end per transaction. A small gap (up to `EXACT_GAP` offsets) is therefore
read through once and its records counted; a larger one is the offset difference, marked
approximate (markers included).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec

from tickwheel.adapters.kafka.admin import admin_client
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.fatal import GuardedConsumer as Consumer

ADMIN_TIMEOUT_S = 5.0
# A partition's end or start offset asked again after a retriable answer (a leader moving).
LIST_OFFSETS_ATTEMPTS = 3
LIST_OFFSETS_PAUSE_S = 0.3
#: Gaps up to this many offsets are read and their records counted (markers are not records).
EXACT_GAP = 1000


@dataclass(frozen=True)
class GroupMember:
    """One live member: its client id (tickwheel's services name themselves in it), host, and
    the partitions the group assigned it."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PartitionLag:
    """One partition a group reads: its committed offset (None: nothing committed yet), the
    partition's end, and how many records lie between them: counted when `exact`, else the
    offset difference; None when nothing is committed and the partition holds records."""

    topic: str
    partition: int
    committed: int | None
    end: int
    lag: int | None
    exact: bool = True


@dataclass(frozen=True)
class GroupLag:
    """A consumer group: its state (`stable`, `empty`, `preparingrebalance`, ...), live members
    and, per partition it has committed or been assigned, its lag."""

    group_id: str
    state: str
    members: tuple[GroupMember, ...]
    partitions: tuple[PartitionLag, ...]

    @property
    def lag(self) -> int:
        """Records behind, over every partition with a committed offset."""
        return sum(p.lag for p in self.partitions if p.lag is not None)

    @property
    def exact(self) -> bool:
        """Every partition's lag was counted in records (no offset difference stands in)."""
        return all(p.exact for p in self.partitions)

    @property
    def uncommitted(self) -> int:
        """Partitions holding records the group has been assigned but never committed."""
        return sum(1 for p in self.partitions if p.committed is None and p.lag is None)

    def owners(self, topic: str) -> dict[int, GroupMember]:
        """Partition of `topic` -> the member the group assigned it."""
        return {p: m for m in self.members for t, p in m.partitions if t == topic}


def lag_of(committed: int | None, end: int) -> int | None:
    """Offsets between a committed offset and the partition's end; never negative (a commit
    can stand past a stable end while a transaction is still open on the partition)."""
    return None if committed is None else max(0, end - committed)


def partition_lag(
    topic: str,
    partition: int,
    committed: int | None,
    start: int,
    end: int,
    readable: Mapping[tuple[str, int], list[int]],
) -> PartitionLag:
    """The lag of one partition, from its offsets and the records found readable in the gaps
    that were read (`readable`: record offsets from the lowest committed offset to the end)."""
    if committed is None:
        # Nothing committed: owed nothing when the partition holds nothing to read.
        return PartitionLag(topic, partition, None, end, 0 if start >= end else None)
    gap = lag_of(committed, end) or 0
    if gap == 0:
        return PartitionLag(topic, partition, committed, end, 0)
    found = readable.get((topic, partition))
    if found is None:
        return PartitionLag(topic, partition, committed, end, gap, exact=False)
    return PartitionLag(topic, partition, committed, end, sum(1 for o in found if o >= committed))


def readable_records(
    bootstrap: str | None, gaps: Mapping[tuple[str, int], tuple[int, int]], timeout: float
) -> dict[tuple[str, int], list[int]]:
    """(topic, partition) -> offsets of the committed records in [from, end), for each gap,
    read once; a gap not read to its end within `timeout` is left out (approximate then)."""
    if not gaps:
        return {}
    consumer = Consumer(
        consumer_config(
            f"tickwheel-lag-{uuid.uuid4()}", bootstrap, **{"enable.partition.eof": False}
        )
    )
    found: dict[tuple[str, int], list[int]] = {tp: [] for tp in gaps}
    unread = set(gaps)
    try:
        consumer.assign([TopicPartition(t, p, gaps[(t, p)][0]) for t, p in gaps])
        deadline = time.monotonic() + timeout
        while unread and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.2):
                tp = (msg.topic(), msg.partition())
                if msg.error() is None and tp in unread and msg.offset() < gaps[tp][1]:
                    found[tp].append(msg.offset())
            # A marker is never delivered: where the consumer stands says it is past the end.
            positions = consumer.position([TopicPartition(t, p) for t, p in unread])
            unread -= {
                (tp.topic, tp.partition)
                for tp in positions
                if tp.offset >= gaps[(tp.topic, tp.partition)][1]
            }
    finally:
        consumer.close()
    return {tp: offsets for tp, offsets in found.items() if tp not in unread}


def _state(value: Any) -> str:
    return str(getattr(value, "name", value) or "unknown").lower()


def _member(member: Any) -> GroupMember:
    assignment = getattr(member, "assignment", None)
    assigned = getattr(assignment, "topic_partitions", None) or []
    return GroupMember(
        member_id=str(member.member_id),
        client_id=str(member.client_id),
        host=str(member.host).lstrip("/"),
        partitions=tuple(sorted((tp.topic, tp.partition) for tp in assigned)),
    )


def group_ids(admin: Any, wanted: Callable[[str], bool], timeout: float) -> list[str]:
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout)
    return sorted(g.group_id for g in listed.valid if wanted(g.group_id))


def _committed(admin: Any, group_id: str, timeout: float) -> dict[tuple[str, int], int]:
    request = [ConsumerGroupTopicPartitions(group_id)]
    answer = admin.list_consumer_group_offsets(request, request_timeout=timeout)[group_id]
    found: dict[tuple[str, int], int] = {}
    for tp in answer.result(timeout).topic_partitions or []:
        if tp.error is None and tp.offset >= 0:
            found[(tp.topic, tp.partition)] = int(tp.offset)
    return found


def _offsets(
    admin: Any, partitions: Iterable[tuple[str, int]], spec: Any, timeout: float
) -> dict[tuple[str, int], int]:
    wanted = {TopicPartition(t, p): spec for t, p in partitions}
    if not wanted:
        return {}
    for attempt in range(1, LIST_OFFSETS_ATTEMPTS + 1):
        futures = admin.list_offsets(
            wanted, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
        )
        try:
            return {
                (tp.topic, tp.partition): int(f.result(timeout).offset) for tp, f in futures.items()
            }
        except KafkaException as exc:
            # A leader moving or just elected (a new topic) answers NOT_LEADER_FOR_PARTITION
            # once, and the admin client's list_offsets does not retry it: ask again.
            error = exc.args[0] if exc.args else None
            retriable = error is not None and (
                error.retriable() or error.code() == KafkaError.NOT_LEADER_FOR_PARTITION
            )
            if attempt == LIST_OFFSETS_ATTEMPTS or not retriable:
                raise
            time.sleep(LIST_OFFSETS_PAUSE_S)
    raise AssertionError("unreachable: the last attempt returns or raises")


def describe_groups(
    bootstrap: str | None, wanted: Callable[[str], bool], timeout: float = ADMIN_TIMEOUT_S
) -> list[GroupLag]:
    """Every consumer group whose id `wanted` accepts, with members and lag, by group id."""
    admin = admin_client(bootstrap, quiet=True)
    ids = group_ids(admin, wanted, timeout)
    if not ids:
        return []
    described = admin.describe_consumer_groups(ids, request_timeout=timeout)
    groups = {i: described[i].result(timeout) for i in ids}
    committed = {i: _committed(admin, i, timeout) for i in ids}
    members = {i: [_member(m) for m in groups[i].members] for i in ids}
    read = {i: set(committed[i]) | {tp for m in members[i] for tp in m.partitions} for i in ids}
    every = set().union(*read.values())
    ends = _offsets(admin, every, OffsetSpec.latest(), timeout)
    starts = _offsets(admin, every, OffsetSpec.earliest(), timeout)
    # One read over every small gap, from the lowest offset any group committed there.
    gaps: dict[tuple[str, int], tuple[int, int]] = {}
    for i in ids:
        for tp, offset in committed[i].items():
            if 0 < ends[tp] - offset <= EXACT_GAP:
                gaps[tp] = (min(offset, gaps.get(tp, (offset, 0))[0]), ends[tp])
    readable = readable_records(bootstrap, gaps, timeout)
    found = []
    for i in ids:
        rows = tuple(
            partition_lag(t, p, committed[i].get((t, p)), starts[(t, p)], ends[(t, p)], readable)
            for t, p in sorted(read[i])
        )
        found.append(
            GroupLag(
                i,
                _state(groups[i].state),
                tuple(sorted(members[i], key=lambda m: m.client_id)),
                rows,
            )
        )
    return found
