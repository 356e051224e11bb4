"""Consumer groups as plain values: who is in a group, what each member holds, and how far the
group's committed offsets stand behind the end of each partition it reads (its lag).

The admin client's own description objects (`ConsumerGroupDescription`, `MemberDescription`,
futures) stay in this module, so a caller (the console's operations panel) gets typed values
it can test without a broker, and nothing outside `tickwheel.adapters.kafka` touches the client.

The end of a partition is its last stable offset (`read_committed`): every tickwheel consumer
reads committed records only, so a record of an open transaction is not yet owed to anyone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec

from tickwheel.adapters.kafka.admin import admin_client

ADMIN_TIMEOUT_S = 5.0


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
    partition's end, and how many records lie between them (None when nothing is committed)."""

    topic: str
    partition: int
    committed: int | None
    end: int
    lag: int | None


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
    def uncommitted(self) -> int:
        """Partitions read (assigned) without any committed offset yet."""
        return sum(1 for p in self.partitions if p.committed is None)

    def owners(self, topic: str) -> dict[int, GroupMember]:
        """Partition of `topic` -> the member the group assigned it."""
        return {p: m for m in self.members for t, p in m.partitions if t == topic}


def lag_of(committed: int | None, end: int) -> int | None:
    """Records between a committed offset and the partition's end; never negative (a commit
    can stand past a stable end while a transaction is still open on the partition)."""
    return None if committed is None else max(0, end - committed)


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


def _ends(admin: Any, partitions: Iterable[tuple[str, int]], timeout: float) -> dict[Any, int]:
    wanted = {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}
    if not wanted:
        return {}
    futures = admin.list_offsets(
        wanted, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
    )
    return {(tp.topic, tp.partition): int(f.result(timeout).offset) for tp, f in futures.items()}


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
    ends = _ends(admin, set().union(*read.values()), timeout)
    found = []
    for i in ids:
        rows = tuple(
            PartitionLag(t, p, committed[i].get((t, p)), ends[(t, p)],
                         lag_of(committed[i].get((t, p)), ends[(t, p)]))
            for t, p in sorted(read[i])
        )  # fmt: skip
        found.append(GroupLag(i, _state(groups[i].state),
                              tuple(sorted(members[i], key=lambda m: m.client_id)), rows))  # fmt: skip
    return found
