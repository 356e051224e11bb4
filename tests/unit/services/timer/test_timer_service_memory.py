"""The timer service's whole loop on the in-memory Kafka (`tickwheel.adapters.kafka.memory`),
driven one turn at a time (`TimerService.step`) on a fake clock: the group's rebalances, the
restore (fencing the previous owner, reading states, definitions and the request-log tail),
the transaction writer, the checkpoint and dead letters, as `service.run` does them on a
cluster. The unit tier of issue 10 (item 4): definitions in, execution requests out exactly
once across a rebalance, a crash and a restart; a bad record dead-lettered while its partition
keeps going. The real-broker tests (`tests/integration/test_timer*.py`, `tests/chaos`) stay as
they are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import (
    MemoryBroker,
    MemoryClients,
    MemoryEventProducer,
    MemoryPartitionReader,
)
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.clock import FakeClock
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import load_topology, topic_name
from tickwheel.topology import topic as declared_topic

T0_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z, a whole minute
MINUTE_MS = 60_000
TURN_S = 0.5  # fake time between loop turns
MAX_TURNS = 200  # every wait below is bounded by a count of loop turns
PARTITIONS = declared_topic("jobs.definitions").partitions
GROUP = "timer-memory-tier"


class Cluster:
    """An in-memory broker with the declared topics, a fake clock, and the timers on it."""

    def __init__(self) -> None:
        self.clock = FakeClock(T0_MS / 1000)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(load_topology())
        self.clients = MemoryClients(self.broker)
        self.reader = MemoryPartitionReader(self.broker)
        self.producer = MemoryEventProducer(self.broker)

    def timer(self, instance: str, state_lag_ms: int = 0) -> TimerService:
        settings = TimerSettings(instance=instance, bootstrap="memory", group_id=GROUP,
                                 tick_ms=50, metrics_port=0, state_lag_ms=state_lag_ms)  # fmt: skip
        service = TimerService(settings, clock=self.clock, clients=self.clients, inline=True)
        service.start()
        return service

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def publish(self, key: str, value: bytes | None) -> None:
        self.producer.send(topic_name("jobs.definitions"), key, value)

    def publish_job(self, job_id: str) -> None:
        spec = {"jobId": job_id, "type": "noop", "cron": "* * * * *", "jitter": "0s"}
        self.publish(job_id, encode("JobDefinition", validate_job(spec, self.now_ms())))

    def turns(self, timers: Iterable[TimerService], count: int) -> None:
        """`count` loop turns of every timer, the clock moving TURN_S before each."""
        timers = list(timers)
        for _ in range(count):
            self.clock.advance(TURN_S)
            for timer in timers:
                timer.step()

    def until_served(self, timers: list[TimerService], owned: dict[str, int]) -> None:
        """Turns until each timer serves as many partitions as `owned` says (by instance)."""
        for _ in range(MAX_TURNS):
            served = {t.settings.instance: len(t.partitions) for t in timers}
            if served == owned:
                return
            self.turns(timers, 1)
        raise AssertionError(f"never served as asked: {served} != {owned}")

    def requests(self) -> list[dict[str, Any]]:
        """Every committed execution request (read_committed: what a worker can see)."""
        found = []
        for priority in ("high", "normal", "low"):
            for record in self.reader.read_to_end(topic_name(f"executions.{priority}")):
                if record.value is not None:
                    found.append(decode(record.value, "ExecutionRequest")[1])
        return found

    def dead_letters(self) -> list[dict[str, Any]]:
        return [decode(r.value, "DeadLetter")[1]
                for r in self.reader.read_to_end(topic_name("executions.dlq"))
                if r.value is not None]  # fmt: skip


def _slots_fired(requests: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    return Counter((r["job_id"], r["scheduled_time"]) for r in requests)


def _every_minute(job_ids: Iterable[str], first_ms: int, last_ms: int) -> set[tuple[str, int]]:
    return {(job, slot) for job in job_ids for slot in range(first_ms, last_ms + 1, MINUTE_MS)}


@pytest.mark.parametrize("state_lag_ms", [0, 600_000], ids=["states-each-tick", "request-log"])
def test_every_slot_is_requested_once_across_a_rebalance_a_crash_and_a_restart(
    state_lag_ms: int,
) -> None:
    """With `state_lag_ms` long, no fired job's state is written while the test runs: each
    restore rebuilds them from the request topics after the checkpoint (decision 0008)."""
    cluster = Cluster()
    jobs = [f"job-{i}" for i in range(18)]
    for job in jobs:
        cluster.publish_job(job)
    first = cluster.timer("a", state_lag_ms)
    cluster.until_served([first], {"a": PARTITIONS})
    cluster.turns([first], 130)  # past the first minute's slot

    # A second instance joins: the group moves partitions to it (cooperative), and it restores
    # them from what the first committed.
    second = cluster.timer("b", state_lag_ms)
    cluster.until_served([first, second], {"a": PARTITIONS // 2, "b": PARTITIONS // 2})
    cluster.turns([first, second], 120)

    # The first instance crashes: its session ends, the second restores its partitions, fencing
    # its producers; the crashed one is never stepped again, and never closed.
    member = first.consumer.consumer_group_metadata().member_id  # type: ignore[attr-defined]
    cluster.broker.expire_member(GROUP, member)
    cluster.until_served([second], {"b": PARTITIONS})
    cluster.turns([second], 120)

    # It restarts (a new process, a new member): half the partitions come back to it.
    restarted = cluster.timer("a", state_lag_ms)
    cluster.until_served([second, restarted], {"b": PARTITIONS // 2, "a": PARTITIONS // 2})
    cluster.turns([second, restarted], 120)
    end_ms = cluster.now_ms()

    fired = _slots_fired(cluster.requests())
    assert max(fired.values()) == 1, [slot for slot, n in fired.items() if n > 1][:5]
    # Every slot from the first minute after creation to the last whole minute before the end.
    first_slot = T0_MS + MINUTE_MS
    last_slot = (end_ms - 1_000) // MINUTE_MS * MINUTE_MS
    expected = _every_minute(jobs, first_slot, last_slot)
    assert expected <= set(fired), sorted(expected - set(fired))[:5]
    assert set(fired) <= _every_minute(jobs, first_slot, end_ms), "a slot not yet due fired"
    assert last_slot - first_slot >= 3 * MINUTE_MS  # a slot in each phase above
    assert not cluster.dead_letters()


def test_a_zombie_that_ticks_after_its_partitions_moved_writes_nothing() -> None:
    cluster = Cluster()
    jobs = [f"zombie-job-{i}" for i in range(12)]
    for job in jobs:
        cluster.publish_job(job)
    zombie = cluster.timer("a")
    cluster.until_served([zombie], {"a": PARTITIONS})
    member = zombie.consumer.consumer_group_metadata().member_id  # type: ignore[attr-defined]
    cluster.broker.expire_member(GROUP, member)
    heir = cluster.timer("b")
    cluster.until_served([heir], {"b": PARTITIONS})
    # Past the next slot, the zombie ticks without polling (it has not heard it lost them):
    # its producers were fenced by the heir's restore, so its transactions fail and it drops
    # the partitions; the heir alone requests the slot.
    cluster.clock.set((T0_MS + MINUTE_MS) / 1000 + 1)
    zombie._tick_all()
    with_jobs = {partition_for(job, PARTITIONS) for job in jobs}
    assert with_jobs and not with_jobs & zombie.partitions.keys()  # a partition with nothing
    # to write opens no transaction, so only those with a slot learn they were fenced
    cluster.turns([heir], 4)
    fired = _slots_fired(cluster.requests())
    assert fired == Counter({(job, T0_MS + MINUTE_MS): 1 for job in jobs})


def test_a_bad_definition_is_dead_lettered_and_its_partition_keeps_going() -> None:
    cluster = Cluster()
    timer = cluster.timer("a")
    cluster.until_served([timer], {"a": PARTITIONS})
    bad_key = "not-a-definition"
    partition = partition_for(bad_key, PARTITIONS)
    # The next job published to the same partition, after the bad record.
    after = next(f"after-{i}" for i in range(1000)
                 if partition_for(f"after-{i}", PARTITIONS) == partition)  # fmt: skip
    cluster.publish(bad_key, b"\x00not avro")
    cluster.publish_job(after)
    cluster.turns([timer], 4)
    [letter] = cluster.dead_letters()
    assert letter["source_topic"] == topic_name("jobs.definitions")
    assert letter["source_partition"] == partition and letter["source_offset"] == 0
    assert letter["job_id"] == bad_key and letter["raw_value"] == b"\x00not avro"
    assert timer.partitions[partition].timer.jobs.keys() == {after}

    cluster.clock.set((T0_MS + MINUTE_MS) / 1000)
    cluster.turns([timer], 4)
    assert _slots_fired(cluster.requests()) == Counter({(after, T0_MS + MINUTE_MS): 1})
    # A restart's restore meets the bad record again, and still serves the job after it.
    timer.close()
    again = cluster.timer("a2")
    cluster.until_served([again], {"a2": PARTITIONS})
    assert again.partitions[partition].timer.jobs.keys() == {after}


def test_a_fenced_partition_still_assigned_is_restored_after_the_recheck_and_fires_once() -> None:
    cluster = Cluster()
    jobs = [f"fenced-job-{i}" for i in range(12)]
    for job in jobs:
        cluster.publish_job(job)
    timer = cluster.timer("a")
    cluster.until_served([timer], {"a": PARTITIONS})
    victim = partition_for(jobs[0], PARTITIONS)
    # Another producer with the partition's transactional id (an operator's tool, a zombie's
    # restart) fences ours: the next slot's transaction fails, the partition is dropped.
    cluster.clients.transactional(timer.partitions[victim].producer.transactional_id).init()
    cluster.clock.set((T0_MS + MINUTE_MS) / 1000)
    cluster.turns([timer], 2)
    assert victim not in timer.partitions and victim in timer.owned.due
    # Still ours after the session timeout's re-check: restored (the missed slot, within the
    # misfire grace, fired by the restore's catch-up), and it fires on.
    cluster.until_served([timer], {"a": PARTITIONS})
    assert cluster.now_ms() >= T0_MS + MINUTE_MS + 30_000  # not before the re-check
    cluster.clock.set((T0_MS + 2 * MINUTE_MS) / 1000)
    cluster.turns([timer], 4)
    fired = _slots_fired(cluster.requests())
    assert max(fired.values()) == 1
    assert set(fired) == _every_minute(jobs, T0_MS + MINUTE_MS, T0_MS + 2 * MINUTE_MS)
