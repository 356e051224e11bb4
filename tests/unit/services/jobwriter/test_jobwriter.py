"""The single writer's judging on the in-memory Kafka (decisions 0099, 0126): commands of one
partition judged in log order against the catalogue, each verdict committed with its effect
and the command's offset; a new owner restores the catalogue and resumes where the last
committed transaction ended, so no command is judged twice; direct producers are folded in."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.clock import FakeClock
from tickwheel.runtime.partitions import RESTORE_RETRY_S
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.jobwriter.judge import WRITER_HEADER
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.topology import load_topology, topic_name

NOW_S = 1_800_000_000.0


class Cluster:
    def __init__(self) -> None:
        self.clock = FakeClock(NOW_S)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(load_topology())
        self.clients = MemoryClients(self.broker)
        self.producer = self.clients.events()

    def judge(self, instance: str = "judge-1") -> JobWriterService:
        settings = JobWriterSettings(instance=instance, bootstrap="memory", group_id="jw")
        service = JobWriterService(settings, self.clients, clock=self.clock)
        service.start()
        # Bounded: the restore runs on its own thread; the fake answers at once.
        for _ in range(2000):
            service.step()
            if len(service.partitions) == 6:
                return service
            threading.Event().wait(0.005)
        raise AssertionError(f"restored {sorted(service.partitions)} of 6 partitions")

    def definition(self, job_id: str, version: int = 1, **fields: Any) -> dict[str, Any]:
        spec = {"jobId": job_id, "type": "noop", "cron": "*/5 * * * *", **fields}
        return validate_job(spec, int(self.clock.now() * 1000), version)

    def send(self, kind: str, job_id: str, definition: dict[str, Any] | None = None,
             expected: int | None = None, **extra: Any) -> str:  # fmt: skip
        command_id = str(uuid.uuid4())
        command = {
            "command_id": command_id, "job_id": job_id, "kind": kind,
            "expected_version": expected,
            "definition": None if definition is None else encode("JobDefinition", definition),
            "requested_at": int(self.clock.now() * 1000), **extra,
        }  # fmt: skip
        self.producer.send(topic_name("jobs.commands"), job_id, encode("JobCommand", command))
        self.producer.flush()
        return command_id

    def verdicts(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for record in self.clients.reader().read_to_end(topic_name("jobs.verdicts")):
            value = decode(record.value or b"", "JobVerdict")[1]
            assert value["command_id"] not in out, "one verdict per command"
            out[value["command_id"]] = value
        return out

    def definitions(self, job_id: str) -> list[dict[str, Any] | None]:
        return [
            None if r.value is None else decode(r.value, "JobDefinition")[1]
            for r in self.clients.reader().read_to_end(topic_name("jobs.definitions"))
            if r.key == job_id
        ]

    def settle(self, service: JobWriterService, wanted: int) -> dict[str, dict[str, Any]]:
        for _ in range(50):
            service.step()
            verdicts = self.verdicts()
            if len(verdicts) >= wanted:
                return verdicts
        raise AssertionError(f"{len(self.verdicts())} verdicts, wanted {wanted}")


def test_a_create_is_written_once_and_a_second_create_of_the_id_is_refused() -> None:
    cluster = Cluster()
    service = cluster.judge()
    first = cluster.send("create", "nightly", cluster.definition("nightly"))
    second = cluster.send("create", "nightly", cluster.definition("nightly"))
    verdicts = cluster.settle(service, 2)
    assert verdicts[first]["outcome"] == "created"
    assert verdicts[first]["current_version"] == 1
    assert verdicts[second]["outcome"] == "exists"
    assert verdicts[second]["current_version"] == 1
    written = [r for r in cluster.clients.reader().read_to_end(topic_name("jobs.definitions"))]
    assert len(written) == 1
    assert written[0].headers and written[0].headers[0][0] == WRITER_HEADER


def test_two_updates_at_the_same_expected_version_one_wins_one_conflicts() -> None:
    cluster = Cluster()
    service = cluster.judge()
    cluster.send("create", "j", cluster.definition("j"))
    cluster.settle(service, 1)
    a = cluster.send("update", "j", cluster.definition("j", cron="1 * * * *", version=2), 1)
    b = cluster.send("update", "j", cluster.definition("j", cron="2 * * * *", version=2), 1)
    verdicts = cluster.settle(service, 3)
    assert [verdicts[a]["outcome"], verdicts[b]["outcome"]] == ["updated", "version_conflict"]
    assert verdicts[b]["current_version"] == 2
    versions = [d["version"] for d in cluster.definitions("j") if d is not None]
    assert versions == [1, 2]  # no gap, no repeat
    assert cluster.definitions("j")[-1]["cron"] == "1 * * * *"  # type: ignore[index]


def test_update_and_delete_of_a_missing_or_another_tenants_job_are_not_found() -> None:
    cluster = Cluster()
    service = cluster.judge()
    cluster.send("create", "t", cluster.definition("t", tenantId="acme"))
    cluster.settle(service, 1)
    missing = cluster.send("update", "nope", cluster.definition("nope"), None)
    other = cluster.send("update", "t", cluster.definition("t"), None, tenant_id="globex")
    taken = cluster.send("create", "t", cluster.definition("t"), tenant_id="globex")
    mine = cluster.send("delete", "t", None, 1, tenant_id="acme")
    again = cluster.send("delete", "t", None, None)
    verdicts = cluster.settle(service, 6)
    assert verdicts[missing]["outcome"] == "not_found"
    assert verdicts[other]["outcome"] == "not_found"
    assert verdicts[taken]["outcome"] == "exists"
    assert verdicts[taken]["definition"] is None  # whose it is is not said
    assert verdicts[mine]["outcome"] == "deleted"
    assert verdicts[again]["outcome"] == "not_found"
    assert cluster.definitions("t")[-1] is None  # the tombstone


def test_a_direct_producers_write_is_folded_and_judged_against() -> None:
    cluster = Cluster()
    service = cluster.judge()
    cluster.send("create", "d", cluster.definition("d"))
    cluster.settle(service, 1)
    direct = cluster.definition("d", version=7, cron="7 * * * *")
    cluster.producer.send(topic_name("jobs.definitions"), "d", encode("JobDefinition", direct))
    cluster.producer.flush()
    service.step()  # the follower folds it
    stale = cluster.send("update", "d", cluster.definition("d", version=2), 1)
    fresh = cluster.send("update", "d", cluster.definition("d", version=8), 7)
    verdicts = cluster.settle(service, 3)
    assert verdicts[stale]["outcome"] == "version_conflict"
    assert verdicts[stale]["current_version"] == 7
    assert verdicts[fresh]["outcome"] == "updated"
    assert verdicts[fresh]["current_version"] == 8


def test_a_new_owner_restores_and_judges_each_command_once() -> None:
    cluster = Cluster()
    first = cluster.judge("judge-1")
    cluster.send("create", "r", cluster.definition("r"))
    cluster.settle(first, 1)
    first.close()
    second = cluster.judge("judge-2")  # reads the catalogue, resumes at the group's offset
    conflict = cluster.send("create", "r", cluster.definition("r"))
    update = cluster.send("update", "r", cluster.definition("r", version=2), 1)
    verdicts = cluster.settle(second, 3)  # asserts one verdict per command
    assert verdicts[conflict]["outcome"] == "exists"
    assert verdicts[update]["outcome"] == "updated"
    assert [d["version"] for d in cluster.definitions("r") if d] == [1, 2]


def test_the_idempotency_record_commits_with_the_accepted_create_only() -> None:
    cluster = Cluster()
    service = cluster.judge()
    answer = json.dumps({"status": 201, "body": '{"jobId":"k"}', "headers": {"etag": '"v1"'},
                         "request_id": "req-1"})  # fmt: skip
    keyed = {"idempotency_slot": "acme/key-1", "fingerprint": "f" * 64,
             "idempotency_answer": answer}  # fmt: skip
    accepted = cluster.send("create", "k", cluster.definition("k"), **keyed)
    refused = cluster.send("create", "k", cluster.definition("k"),
                           **{**keyed, "idempotency_slot": "acme/key-2"})  # fmt: skip
    verdicts = cluster.settle(service, 2)
    assert verdicts[accepted]["idempotency_recorded"] is True
    assert verdicts[refused]["idempotency_recorded"] is False
    records = list(cluster.clients.reader().read_to_end(topic_name("api.idempotency")))
    assert [r.key for r in records] == ["acme/key-1"]
    record = decode(records[0].value or b"", "IdempotencyRecord")[1]
    assert (record["status"], record["body"], record["request_id"]) == (201, '{"jobId":"k"}',
                                                                         "req-1")  # fmt: skip


def test_an_unreadable_command_is_dead_lettered_and_an_expired_one_refused() -> None:
    cluster = Cluster()
    service = cluster.judge()
    cluster.producer.send(topic_name("jobs.commands"), "x", b"not avro")
    cluster.producer.flush()
    old = cluster.send("create", "old", cluster.definition("old"))
    cluster.clock.advance(3600)  # past the ten-minute TTL before it is judged
    fresh = cluster.send("create", "new", cluster.definition("new"))
    verdicts = cluster.settle(service, 2)
    assert verdicts[old]["outcome"] == "invalid"
    assert "expired" in (verdicts[old]["detail"] or "")
    assert verdicts[fresh]["outcome"] == "created"
    letters = list(cluster.clients.reader().read_to_end(topic_name("executions.dlq")))
    assert len(letters) == 1
    assert decode(letters[0].value or b"", "DeadLetter")[1]["source_topic"] == topic_name(
        "jobs.commands"
    )


def test_a_judge_the_group_moved_past_commits_nothing_it_judged_after_the_handover() -> None:
    """KIP-447 (decision 0178): one producer per judge, so no new owner fences the old one's
    transactional id; the old one's offsets carry its group generation, and once its session
    expired and the partitions went to another judge, its transaction is refused whole."""
    cluster = Cluster()
    zombie = cluster.judge("judge-1")
    late = cluster.send("create", "late", cluster.definition("late"))
    fetched = list(zombie.consumer.consume(10, 0))  # read, not yet judged: then it stalls
    assert [m.key() for m in fetched] == [b"late"]
    member = zombie.consumer.consumer_group_metadata().member_id  # type: ignore[attr-defined]
    cluster.broker.expire_member("jw", member)  # its session timed out while it stalled
    heir = cluster.judge("judge-2")
    zombie._judge(fetched)  # wakes, not yet knowing, and writes what it judged
    assert zombie.figures.failed["failed"] == 1 and zombie.figures.transactions == 0
    assert cluster.verdicts() == {} and cluster.definitions("late") == []
    verdicts = cluster.settle(heir, 1)  # the heir judges the command: once
    assert verdicts[late]["outcome"] == "created"
    assert [d["version"] for d in cluster.definitions("late") if d] == [1]


def test_a_producer_that_cannot_start_fails_the_poll_and_its_partitions_restore() -> None:
    """A new producer's init failing (the broker away after a failed transaction) is a failed
    transaction: the poll's partitions drop and restore, the command is judged once later."""
    from tickwheel.adapters.kafka.client import KafkaError, KafkaException

    cluster = Cluster()
    service = cluster.judge()
    working = service.clients

    class Refusing:
        def transactional(self, *_args: Any, **_kwargs: Any) -> Any:
            def init(*_a: Any) -> None:
                raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker away"))

            return type("Unready", (), {"init": staticmethod(init)})()

    service.producer, service.clients = None, Refusing()  # type: ignore[assignment]
    command = cluster.send("create", "later", cluster.definition("later"))
    for _ in range(50):  # bounded
        service.step()
        if service.figures.failed["failed"]:
            break
    assert service.figures.failed["failed"] == 1 and len(service.partitions) < 6
    assert cluster.verdicts() == {}
    service.clients = working
    cluster.clock.advance(RESTORE_RETRY_S)  # the retry is due: the partition restores
    for _ in range(2000):  # bounded: the restore runs on its own thread
        service.step()
        if cluster.verdicts():
            break
        threading.Event().wait(0.005)
    assert cluster.verdicts()[command]["outcome"] == "created"
