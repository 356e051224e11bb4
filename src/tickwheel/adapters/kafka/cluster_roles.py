"""Which broker plays which part in a cluster: the coordinator of a consumer group, the
leader of each partition, the active controller. Operators ask it before a planned restart
(restart the coordinator of the timers' group last), and the cluster tier's fault tests kill
exactly the broker that matters rather than a fixed node number."""

from __future__ import annotations

from collections import Counter

from tickwheel.adapters.kafka.admin import admin_client


def group_coordinator(group_id: str, bootstrap: str | None = None, timeout: float = 10.0) -> int:
    """The node id of the broker coordinating `group_id` (it need not have members)."""
    admin = admin_client(bootstrap)
    [future] = admin.describe_consumer_groups([group_id], request_timeout=timeout).values()
    return int(future.result(timeout=timeout).coordinator.id)


def active_controller(bootstrap: str | None = None, timeout: float = 10.0) -> int:
    """The node id of the active KRaft controller."""
    admin = admin_client(bootstrap)  # held until the answer: a dropped client cancels it
    described = admin.describe_cluster(request_timeout=timeout)
    return int(described.result(timeout=timeout).controller.id)


def partition_leaders(
    topics: list[str], bootstrap: str | None = None, timeout: float = 10.0
) -> Counter[int]:
    """How many partitions of `topics` each broker leads (-1: no leader now)."""
    metadata = admin_client(bootstrap).list_topics(timeout=timeout)
    return Counter(
        partition.leader
        for name in topics
        if name in metadata.topics
        for partition in metadata.topics[name].partitions.values()
    )


def group_members(group_id: str, bootstrap: str | None = None, timeout: float = 10.0) -> list[str]:
    """The client ids of the live members of `group_id` (none for a group nobody joined)."""
    admin = admin_client(bootstrap)
    [future] = admin.describe_consumer_groups([group_id], request_timeout=timeout).values()
    return sorted(member.client_id for member in future.result(timeout=timeout).members)
