"""The group coordinator with the cooperative-sticky assignor, incremental as librdkafka runs
it: a rebalance first takes partitions from the members that must give them up (their
`on_revoke`), and only once every one of them has done so (on its next poll) does a second
rebalance hand those partitions to their new owners. Every member is told each rebalance's
assignment, empty or not, as librdkafka calls `on_assign` with an empty list."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from tickwheel.adapters.kafka.memory._log import PartitionKey

EventKind = Literal["assign", "revoke", "lost"]


@dataclass
class Member:
    member_id: str
    topics: list[str]
    owned: set[PartitionKey] = field(default_factory=set)
    events: deque[tuple[EventKind, list[PartitionKey]]] = field(default_factory=deque)
    expired: bool = False


@dataclass(frozen=True)
class GroupMetadata:
    """What `consumer_group_metadata()` returns (KIP-447: the group, its generation, the
    member) and a transaction's offsets are committed for."""

    group_id: str
    generation: int
    member_id: str


class Group:
    def __init__(self, group_id: str, partitions_of: Callable[[str], list[PartitionKey]]):
        self.group_id = group_id
        self.generation = 0
        self.members: dict[str, Member] = {}
        self.committed: dict[PartitionKey, int] = {}
        self._partitions_of = partitions_of
        self._joined = 0
        # Partitions a member was told to revoke and has not yet let go of: nobody gets them.
        self._unreleased: dict[PartitionKey, str] = {}

    def knows(self, member_id: str) -> bool:
        """Whether offsets may be committed as `member_id`: a current member, or no member
        at all (a consumer assigned by hand commits for its group without joining it)."""
        return not member_id or member_id in self.members

    def join(self, topics: list[str]) -> Member:
        self._joined += 1
        member = Member(f"memory-{self.group_id}-{self._joined}", list(topics))
        self.members[member.member_id] = member
        self.rebalance()
        return member

    def leave(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        for tp in [tp for tp, owner in self._unreleased.items() if owner == member_id]:
            del self._unreleased[tp]
        self.rebalance()

    def expire(self, member_id: str) -> None:
        member = self.members.get(member_id)
        if member is None:
            return
        member.expired = True
        member.events.clear()
        member.events.append(("lost", sorted(member.owned)))
        member.owned.clear()
        self.leave(member_id)

    def released(self, member_id: str, partitions: list[PartitionKey]) -> None:
        """The member served its revoke: once nobody still holds a revoked partition, the
        second rebalance gives them out."""
        for tp in partitions:
            if self._unreleased.get(tp) == member_id:
                del self._unreleased[tp]
        if not self._unreleased:
            self.rebalance()

    def rebalance(self) -> None:
        self.generation += 1
        live = [m for m in self.members.values() if not m.expired]
        target = self._sticky_targets(live)
        taken = {tp for m in live for tp in m.owned} | set(self._unreleased)
        for member in live:
            revoke = member.owned - target[member.member_id]
            grant = target[member.member_id] - member.owned - taken
            if revoke:
                member.events.append(("revoke", sorted(revoke)))
                for tp in revoke:
                    self._unreleased[tp] = member.member_id
            member.owned = (member.owned - revoke) | grant
            member.events.append(("assign", sorted(grant)))

    def _sticky_targets(self, live: list[Member]) -> dict[str, set[PartitionKey]]:
        """Per topic, spread its partitions over the members subscribed to it as evenly as
        possible (`base` each, `extra` of them one more), each member keeping what it owns as
        far as its share allows."""
        target: dict[str, set[PartitionKey]] = {m.member_id: set() for m in live}
        for topic in sorted({t for m in live for t in m.topics}):
            partitions = self._partitions_of(topic)
            members = [m for m in live if topic in m.topics]
            if not members or not partitions:
                continue
            base, extra = divmod(len(partitions), len(members))
            kept: dict[str, list[PartitionKey]] = {}
            for member in members:
                mine = sorted(tp for tp in member.owned if tp[0] == topic)
                share = base
                if len(mine) > base and extra:
                    share, extra = base + 1, extra - 1
                kept[member.member_id] = mine[:share]
            held = {tp for tps in kept.values() for tp in tps}
            free = [tp for tp in partitions if tp not in held]
            for member in members:
                while len(kept[member.member_id]) < base:
                    kept[member.member_id].append(free.pop(0))
            for member in members:
                if free and extra and len(kept[member.member_id]) == base:
                    kept[member.member_id].append(free.pop(0))
                    extra -= 1
            for member in members:
                target[member.member_id] |= set(kept[member.member_id])
        return target
