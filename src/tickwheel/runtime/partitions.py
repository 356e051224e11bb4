"""The one lifecycle of a partition owned by a partitioned, exactly-once service (the timer,
the orchestrator, the job writer): the group assigns it; it is paused and restored from its
changelog on a restore thread (`BackgroundRestores`); once restored it is served, its input
read from the position the restore found; a transaction that fails drops its memory and it is
restored again from what was committed — after a fence only once the group session has
passed, so that a partition still assigned to us then really is ours (decision 0004).

A service supplies what differs: how to restore a partition (`restore`), where its input
resumes (`position`), what to let go of when a partition leaves (`dropped`), and what to do
with a partition once it is served. Everything else — the group consumer's membership, the
pause/seek/resume dance, the retry schedule on the injected clock, the constants, the bounded
stop, the partition count a resize recorded — is written here once.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.client import KafkaException, TopicPartition
from tickwheel.adapters.kafka.topology_changes import read_changes
from tickwheel.clock import Clock
from tickwheel.ports.kafka import GroupConsumer, KafkaClients
from tickwheel.runtime.restores import BackgroundRestores, RestoreResult
from tickwheel.runtime.shutdown import KAFKA_BUDGET_S, ShutdownDeadline
from tickwheel.runtime.transactions import Outcome
from tickwheel.topology import JOBS_GROUP, group_partitions

P = TypeVar("P")

# After a fence, wait longer than the group session timeout (10 s) before restoring: by then
# a zombie has been told it lost its partitions, so a partition still assigned to us after a
# fence really is ours, and restoring it cannot fence the rightful owner in turn.
FENCED_RECHECK_S = 30.0
# A restore that failed (the broker away, a read that timed out), or a transaction that did
# not commit for a reason other than a fence: the partition is read back this much later.
RESTORE_RETRY_S = 2.0
# The group consumer's membership: static (a restarted instance with the same name gets its
# partitions back without waiting for a rebalance), a session a broker restart survives, and
# a poll interval no restore or catch-up exceeds.
SESSION_TIMEOUT_MS = 10_000
MEMBERSHIP = {
    "max.poll.interval.ms": 600_000,
    "session.timeout.ms": SESSION_TIMEOUT_MS,
    "heartbeat.interval.ms": 1000,
}


def group_consumer(
    clients: KafkaClients[Any], group_id: str, instance: str, **config: Any
) -> GroupConsumer[Any]:
    """The consumer through which the group gives an instance its partitions."""
    return clients.consumer(
        group_id, **MEMBERSHIP, **{"group.instance.id": f"{group_id}-{instance}"}, **config
    )


@dataclass(frozen=True)
class JobsGroup:
    """The jobs group's partition count as the cluster records it (the declared one, or a
    resize's: decision 0211), and whether a resize was ever recorded."""

    partitions: int
    resized: bool


def adopt_jobs_group(bootstrap: str | None, declared: int) -> JobsGroup:
    """Verify the cluster's topology (refusing to start mid-resize) and read the jobs group's
    partition count from it."""
    specs = verify_topology(bootstrap=bootstrap)
    count = group_partitions(specs) or declared
    return JobsGroup(count, JOBS_GROUP in read_changes(bootstrap))


class OwnedPartitions(Generic[P]):
    """The partitions of `topic` the group gives this instance, each in one of three states:
    restoring (paused, its restore queued or running), served (`served[partition]`, what the
    restore returned), or due for another restore (`due`, after a failure or a fence).

    `restore(partition)` runs on the restore thread (in the loop's own thread when `inline`:
    the in-memory broker is one thread's) and returns the service's state for the partition.
    `position(state)` is the offset of `topic` its input resumes from. `dropped(partition,
    state)` is told whenever a partition leaves `served` (revoked, failed, fenced), with its
    state if it was served and whether the group took it away (`revoked`: its producer has
    its last records to deliver; a partition dropped after a failed transaction has none, and
    a fenced producer's flush would only raise), so the service lets go of what it held
    beside it."""

    def __init__(
        self,
        *,
        name: str,
        consumer: GroupConsumer[Any],
        topic: str,
        restore: Callable[[int], P],
        position: Callable[[P], int],
        clock: Clock,
        deadline: ShutdownDeadline | None,
        log: logging.Logger,
        dropped: Callable[[int, P | None, bool], None] | None = None,
        inline: bool = False,
    ) -> None:
        self.name = name
        self.consumer = consumer
        self.topic = topic
        self.position = position
        self.clock = clock
        self.deadline = deadline  # armed by stop(): past it the process exits (decision 0050)
        self.log = log
        self._dropped = dropped
        self.served: dict[int, P] = {}
        self.due: dict[int, float] = {}  # partition -> when to restore it again (clock, s)
        self.restores: BackgroundRestores[P] = BackgroundRestores(
            restore, name=f"{name}-restore", inline=inline
        )
        self.running = True
        self._last_now_ms = 0

    # -- time and stopping -------------------------------------------------------------------
    def now_ms(self) -> int:
        """The injected clock in milliseconds, never backwards: a wall clock stepped back by
        NTP must not move a wheel or a retry back."""
        self._last_now_ms = max(self._last_now_ms, int(self.clock.now() * 1000))
        return self._last_now_ms

    def stop(self) -> None:
        """Stop the loop (it ends its turn, then the service closes) and arm the deadline."""
        self.running = False
        self.restores.stop()
        if self.deadline is not None:
            self.deadline.arm(KAFKA_BUDGET_S)

    def flush_budget(self) -> float:
        """How long a flush may wait: 5 s, less what is left before a stop's deadline."""
        remaining = self.deadline.remaining() if self.deadline is not None else 5.0
        return min(5.0, remaining)

    # -- the group -----------------------------------------------------------------------
    def subscribe(
        self, before_revoke: Callable[[list[TopicPartition]], None] | None = None
    ) -> None:
        """Join the group; `before_revoke` runs first when partitions are taken away (the
        orchestrator settles their transactions in flight)."""

        def revoke(consumer: GroupConsumer[Any], partitions: list[TopicPartition]) -> None:
            if before_revoke is not None:
                before_revoke(partitions)
            self.revoked(consumer, partitions)

        self.consumer.subscribe(
            [self.topic], on_assign=self.assigned, on_revoke=revoke, on_lost=revoke
        )

    def assigned(self, consumer: GroupConsumer[Any], partitions: list[TopicPartition]) -> None:
        """Partitions are assigned paused (nothing is read before the previous owner is fenced
        and the state is back) and queued for restore."""
        consumer.incremental_assign(partitions)
        ours = [
            TopicPartition(tp.topic, tp.partition) for tp in partitions if tp.topic == self.topic
        ]
        if ours:
            consumer.pause(ours)
        for tp in ours:
            self.restores.begin(tp.partition)

    def revoked(self, consumer: GroupConsumer[Any], partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp.topic != self.topic:
                continue
            self.due.pop(tp.partition, None)
            self.restores.cancel(tp.partition)  # a restore under way is now stale
            state = self.served.pop(tp.partition, None)
            self._tell_dropped(tp.partition, state, revoked=True)
            if state is not None:
                self.log.info(
                    "partition revoked",
                    extra={"action": "partition_revoked", "partition": tp.partition},
                )
        # On a lost assignment the client may already have dropped them.
        with contextlib.suppress(KafkaException):
            consumer.incremental_unassign(partitions)

    def owned(self) -> set[int]:
        """The partitions of `topic` the group assigns us now."""
        return {tp.partition for tp in self.consumer.assignment() if tp.topic == self.topic}

    # -- restores ------------------------------------------------------------------------
    def restored(self) -> Iterator[RestoreResult[P]]:
        """Each restore finished since the last call, its input seeked to where the restore
        stopped and resumed, its state in `served`; a restore that failed is scheduled again
        instead. The caller does what serving it takes beyond that (and calls `failed` if
        that fails)."""
        for result in self.restores.finished():
            state = result.value
            if result.error is not None or state is None:
                self.failed(result.partition, result.error or RuntimeError("no result"))
                continue
            try:
                offset = self.position(state)
                self.consumer.seek(TopicPartition(self.topic, result.partition, max(0, offset)))
                self.consumer.resume([TopicPartition(self.topic, result.partition)])
            except KafkaException as exc:
                self.failed(result.partition, exc)
                continue
            self.served[result.partition] = state
            yield result

    def failed(self, partition: int, exc: BaseException) -> None:
        """A restore, or serving what it returned, failed: try again later."""
        self.log.error(
            "restore failed; trying again",
            extra={"action": "restore_failed", "partition": partition, "error": repr(exc)},
        )
        self.drop(partition, RESTORE_RETRY_S)

    def settle(self, partition: int, state: P, outcome: Outcome) -> bool:
        """Act on how a transaction of `partition` ended; returns whether it committed. Fenced:
        a newer owner has the partition, so stop writing and wait for the group to say what we
        own. Failed: the memory moved past what committed, so read it back."""
        if outcome == "committed":
            return True
        if self.served.get(partition) is state:  # not revoked meanwhile
            self.drop(partition, FENCED_RECHECK_S if outcome == "fenced" else RESTORE_RETRY_S)
        return False

    def drop(self, partition: int, retry_in_s: float) -> None:
        """Forget the partition's memory and pause its input; it is restored from Kafka in
        `retry_in_s` if the group still gives it to us then."""
        state = self.served.pop(partition, None)
        self._tell_dropped(partition, state, revoked=False)
        with contextlib.suppress(KafkaException):  # paused until it is served again
            self.consumer.pause([TopicPartition(self.topic, partition)])
        self.due[partition] = self.now_ms() / 1000 + retry_in_s

    def retry_due(self) -> None:
        """Restore again the partitions whose retry is due and which we still own."""
        if not self.due:
            return
        owned = self.owned()
        now_s = self.now_ms() / 1000
        for partition, due in list(self.due.items()):
            if partition not in owned or partition in self.served:
                del self.due[partition]
            elif now_s >= due and not self.restores.under_way(partition):
                del self.due[partition]
                self.restores.begin(partition)

    def _tell_dropped(self, partition: int, state: P | None, *, revoked: bool) -> None:
        if self._dropped is not None:
            self._dropped(partition, state, revoked)


def restore_seconds(result: RestoreResult[Any]) -> float:
    """How long a restore took, from its start to now (installed)."""
    return time.monotonic() - result.started
