"""Job commands awaited by a coroutine (decision 0165) and command ids that name their tenant
(decision 0166), on the in-memory Kafka: many creates wait on one event loop with no thread
each; a late verdict is `VerdictPending` as on the thread path; a failed delivery is the
coroutine's `ProduceFailed`; an accepted create's verdict is answered with the record sent,
not decoded again; a tagged id is recognised for its tenant only."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import pytest

from tests.unit.services.jobwriter.test_jobwriter import Cluster
from tests.unit.services.jobwriter.test_jobwriter_commands import drive
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import ProduceFailed
from tickwheel.sdk.command_ids import command_sent_at, tagged_command_id
from tickwheel.sdk.job_commands import JobCommandWriter, Verdict, VerdictPending


class ReportingProducer:
    """The in-memory producer with delivery reports served by `poll`, as librdkafka's are
    (on whichever thread polls); `fail` makes the next reports failures."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reports: queue.Queue[Any] = queue.Queue()
        self.fail = False

    def send(self, topic: str, key: str | None, value: bytes | None,
             on_delivery: Any = None) -> None:  # fmt: skip
        if not self.fail:
            self.inner.send(topic, key, value)
            self.inner.flush()
        if on_delivery is not None:
            self.reports.put((on_delivery, "broker down" if self.fail else None))

    def flush(self, timeout: float = 30.0) -> None:
        self.inner.flush(timeout)

    def poll(self, timeout: float = 0.0) -> int:
        try:
            report, error = self.reports.get(timeout=timeout)
        except queue.Empty:
            return 0
        report(error, None)
        return 1


class ReportingClients:
    def __init__(self, clients: Any) -> None:
        self.clients = clients
        self.producer = ReportingProducer(clients.events())

    def events(self, **_overrides: Any) -> ReportingProducer:
        return self.producer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.clients, name)


def test_many_creates_wait_on_one_loop_with_no_thread_each() -> None:
    cluster = Cluster()
    stop = threading.Event()
    judge = drive(cluster, stop)
    writer = JobCommandWriter(clients=ReportingClients(cluster.clients), clock=cluster.clock,
                              wait_s=10)  # fmt: skip
    assert writer.can_await()
    threads_seen: list[set[str]] = []

    async def creates() -> list[Verdict]:
        async def one(i: int) -> Verdict:
            job_id = f"async-{i}"
            return await writer.submit_async("create", job_id, cluster.definition(job_id),
                                             tenant_id="acme")  # fmt: skip

        waits = [asyncio.ensure_future(one(i)) for i in range(60)]
        await asyncio.sleep(0)  # every create sent and waiting
        threads_seen.append({t.name for t in threading.enumerate()})
        return await asyncio.gather(*waits)

    try:
        before = {t.name for t in threading.enumerate()}
        verdicts = asyncio.run(creates())
        assert [v.outcome for v in verdicts] == ["created"] * 60
        assert {v.job_id for v in verdicts} == {f"async-{i}" for i in range(60)}
        # 60 creates in flight: the writer's poll thread at most, never a thread per create
        # (the judge's own transaction pool, "jobwriter-tx", grows as it commits).
        new = {n for n in threads_seen[0] - before if not n.startswith("jobwriter")}
        assert new <= {"acked-sends"}
        assert all(command_sent_at(v.command_id, "acme") is not None for v in verdicts)
    finally:
        stop.set()
        judge.join(30)
        writer.close()


def test_a_late_verdict_is_pending_for_a_coroutine_too() -> None:
    cluster = Cluster()
    service = cluster.judge()  # restored, not stepped while the coroutine waits
    writer = JobCommandWriter(clients=ReportingClients(cluster.clients), clock=cluster.clock,
                              wait_s=0.05)  # fmt: skip
    try:
        with pytest.raises(VerdictPending) as late:
            asyncio.run(writer.submit_async("create", "late", cluster.definition("late")))
        assert writer.status(late.value.command_id) == "pending"
        for _ in range(500):  # bounded: the judge answers, the follower reads it
            service.step()
            if isinstance(writer.status(late.value.command_id), Verdict):
                break
            threading.Event().wait(0.01)
        answered = writer.status(late.value.command_id)
        assert isinstance(answered, Verdict) and answered.outcome == "created"
    finally:
        service.close()
        writer.close()


def test_a_failed_delivery_is_the_coroutines_produce_failure() -> None:
    cluster = Cluster()
    clients = ReportingClients(cluster.clients)
    writer = JobCommandWriter(clients=clients, clock=cluster.clock, wait_s=1)
    clients.producer.fail = True
    try:
        with pytest.raises(ProduceFailed, match="broker down"):
            asyncio.run(writer.submit_async("create", "lost", cluster.definition("lost")))
    finally:
        writer.close()


def test_an_accepted_create_is_answered_with_the_record_it_sent() -> None:
    cluster = Cluster()
    record = cluster.definition("same")
    raw = encode("JobDefinition", record)
    value: Any = {"command_id": "c", "job_id": "same", "outcome": "created",
                  "current_version": 1, "definition": raw, "judged_at": 1,
                  "idempotency_recorded": False, "detail": None}  # fmt: skip
    assert Verdict.of(value, (raw, record)).definition is record
    other = cluster.definition("same", version=2)
    decoded = Verdict.of(value, (encode("JobDefinition", other), other)).definition
    assert decoded == record and decoded is not record  # different bytes: decoded


def test_a_tagged_command_id_is_recognised_for_its_tenant_only() -> None:
    command_id = tagged_command_id("acme", 1_796_000_000_123)
    assert command_sent_at(command_id, "acme") == 1_796_000_000_123
    assert command_sent_at(command_id, "globex") is None
    assert command_sent_at(command_id[:-1] + ("0" if command_id[-1] != "0" else "1"),
                           "acme") is None  # fmt: skip
    assert command_sent_at("5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10", "acme") is None
    assert command_sent_at(tagged_command_id(None, 5), "default") == 5
    assert tagged_command_id("acme", 1) != tagged_command_id("acme", 1)
