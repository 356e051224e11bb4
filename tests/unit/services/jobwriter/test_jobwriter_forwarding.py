"""After the jobs group grew from 6 to 12 partitions (decision 0211), a command that sits on a
partition of jobs.commands that no longer owns its job (written before the resize, or by a
producer with old metadata) is never judged there: the job writer's loop, on the in-memory
Kafka, forwards it unchanged to its owner in the transaction that moves the group's offset past
it, the owner judges it (one verdict, the definition on the owner's partition), and neither a
failed transaction nor a new judge forwards it twice."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import owner_partition
from tickwheel.clock import FakeClock
from tickwheel.ports.kafka import ReadRecord
from tickwheel.runtime import partitions as partitions_module
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.jobwriter.restore import transactional_id
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.topology import load_topology, topic_name

DECLARED, RESIZED = 6, 12
NOW_S = 1_800_000_000.0
HEADERS = [("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]


def moved_jobs(count: int) -> list[tuple[str, int, int]]:
    """Job ids whose partition under the declared count is not their owner after the resize:
    (id, where a stale producer put it, its owner)."""
    moved = []
    for i in range(1000):
        job_id = f"nightly-{i}"
        old, new = partition_for(job_id, DECLARED), owner_partition(job_id, RESIZED)
        if old != new:
            moved.append((job_id, old, new))
        if len(moved) == count:
            return moved
    raise AssertionError(f"fewer than {count} job ids move")


def moved_job() -> tuple[str, int, int]:
    return moved_jobs(1)[0]


class Cluster:
    """The in-memory Kafka with the jobs group resized to 12 partitions."""

    def __init__(self) -> None:
        self.clock = FakeClock(NOW_S)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(
            replace(spec, partitions=RESIZED) if spec.co_partition == "jobs" else spec
            for spec in load_topology()
        )
        self.clients = MemoryClients(self.broker)
        self.commands = topic_name("jobs.commands")

    def judge(self, instance: str, adopt: bool = True) -> JobWriterService:
        settings = JobWriterSettings(instance=instance, bootstrap="memory", group_id="jw")
        service = JobWriterService(settings, self.clients, clock=self.clock)
        assert service.partition_count == DECLARED  # the declared count until it adopts
        if adopt:
            service.adopt_partition_count(RESIZED)  # as run() does with the cluster's count
        service.start()
        # Bounded: restores run on their own thread; the fake answers at once.
        self.run(service, lambda: len(service.partitions) == RESIZED, "all partitions restored")
        return service

    def run(self, service: JobWriterService, done: Callable[[], bool], what: str) -> None:
        for _ in range(2000):
            service.step()
            if done():
                return
            threading.Event().wait(0.002)
        raise AssertionError(f"not reached: {what}")

    def create(self, job_id: str, partition: int) -> tuple[str, bytes]:
        """A create, written to `partition` as a producer with old metadata placed it."""
        now_ms = int(self.clock.now() * 1000)
        definition = validate_job(
            {"jobId": job_id, "type": "noop", "cron": "*/5 * * * *"}, now_ms, 1
        )
        command_id = str(uuid.uuid4())
        value = encode(
            "JobCommand",
            {
                "command_id": command_id,
                "job_id": job_id,
                "kind": "create",
                "expected_version": None,
                "definition": encode("JobDefinition", definition),
                "requested_at": now_ms,
            },
        )
        producer = self.clients.transactional("stale-producer")
        producer.init()
        producer.begin()
        producer.send(self.commands, job_id, value, partition=partition, headers=HEADERS)
        producer.commit()
        return command_id, value

    def read(self, name: str, key: str) -> list[ReadRecord]:
        return [r for r in self.clients.reader().read_to_end(topic_name(name)) if r.key == key]

    def verdicts(self) -> list[dict[str, Any]]:
        return [
            decode(r.value or b"", "JobVerdict")[1]
            for r in self.clients.reader().read_to_end(topic_name("jobs.verdicts"))
        ]

    def committed(self, partition: int) -> int:
        offsets = self.broker.group("jw").committed
        return int(offsets.get((self.commands, partition), -1001))


def judged_on(service: JobWriterService, job_id: str) -> list[int]:
    """The partitions whose judge holds the job in its catalogue."""
    return [p for p, runtime in service.partitions.items() if job_id in runtime.judge.catalogue]


def assert_forwarded_once(
    cluster: Cluster, job_id: str, old: int, new: int, command_id: str, value: bytes
) -> None:
    copies = cluster.read("jobs.commands", job_id)
    assert sorted((r.partition, r.offset) for r in copies) == sorted([(old, 0), (new, 0)])
    [forwarded] = [r for r in copies if r.partition == new]
    assert (forwarded.value, list(forwarded.headers)) == (value, HEADERS)  # unchanged
    [verdict] = cluster.verdicts()  # judged once, by its owner
    assert (verdict["command_id"], verdict["outcome"]) == (command_id, "created")
    assert cluster.committed(old) == 1  # moved past it with the forward
    assert cluster.committed(new) == 1


def test_a_command_its_partition_no_longer_owns_is_forwarded_once_and_its_owner_judges_it() -> None:
    cluster = Cluster()
    job_id, old, new = moved_job()
    service = cluster.judge("judge-1")
    command_id, value = cluster.create(job_id, old)
    cluster.run(service, lambda: bool(cluster.verdicts()), "a verdict")
    assert_forwarded_once(cluster, job_id, old, new, command_id, value)
    assert judged_on(service, job_id) == [new]
    service.close()

    heir = cluster.judge("judge-2")  # restores from what was committed
    for _ in range(20):
        heir.step()
    assert_forwarded_once(cluster, job_id, old, new, command_id, value)
    assert judged_on(heir, job_id) == [new]
    heir.close()


def test_a_forward_whose_transaction_failed_is_read_and_forwarded_again_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partitions_module, "FENCED_RECHECK_S", 0.0)  # restore at once
    cluster = Cluster()
    job_id, old, new = moved_job()
    service = cluster.judge("judge-1")
    # This instance's restarted self fences its producer: the poll's transaction, which
    # carries the forward, fails whole and the partition restores from the group's offset.
    cluster.clients.transactional(transactional_id("judge-1")).init()
    command_id, value = cluster.create(job_id, old)
    cluster.run(service, lambda: bool(cluster.verdicts()), "a verdict")
    assert service.figures.failed["fenced"] == 1
    assert_forwarded_once(cluster, job_id, old, new, command_id, value)
    assert judged_on(service, job_id) == [new]
    service.close()


def test_a_command_its_partition_owns_is_judged_there_as_before() -> None:
    cluster = Cluster()
    job_id, _old, new = moved_job()
    service = cluster.judge("judge-1")
    command_id, value = cluster.create(job_id, new)
    cluster.run(service, lambda: bool(cluster.verdicts()), "a verdict")
    assert [(r.partition, r.value) for r in cluster.read("jobs.commands", job_id)] == [(new, value)]
    assert [v["command_id"] for v in cluster.verdicts()] == [command_id]
    assert [r.partition for r in cluster.read("jobs.definitions", job_id)] == [new]
    service.close()


def test_the_partition_count_is_read_when_each_command_is_read() -> None:
    cluster = Cluster()
    (early, early_old, _), (late, late_old, late_new) = moved_jobs(2)
    service = cluster.judge("judge-1")
    service.partition_count = DECLARED  # as if the resize were not adopted yet
    cluster.create(early, early_old)
    cluster.run(service, lambda: len(cluster.verdicts()) == 1, "a verdict")
    assert judged_on(service, early) == [early_old]
    assert [r.partition for r in cluster.read("jobs.commands", early)] == [early_old]
    service.adopt_partition_count(RESIZED)  # from the next command on
    cluster.create(late, late_old)
    cluster.run(service, lambda: len(cluster.verdicts()) == 2, "a second verdict")
    assert judged_on(service, late) == [late_new]
    assert sorted(r.partition for r in cluster.read("jobs.commands", late)) == sorted(
        [late_old, late_new]
    )
    service.close()


def test_a_judge_whose_count_is_older_than_the_topics_forwards_nothing_from_past_it() -> None:
    """Not adopted yet (6 of 12): a command on partition 6..11 sits where the new count puts
    it; forwarding it by the old count would send it back where a new judge forwarded it from."""
    cluster = Cluster()
    job_id, _old, new = moved_job()
    assert new >= DECLARED
    service = cluster.judge("judge-1", adopt=False)
    _command_id, value = cluster.create(job_id, new)
    cluster.run(service, lambda: bool(cluster.verdicts()), "a verdict")
    assert [(r.partition, r.value) for r in cluster.read("jobs.commands", job_id)] == [(new, value)]
    assert judged_on(service, job_id) == [new]
    service.close()
