"""The writer's side of the single writer on the in-memory Kafka (decision 0126): a command's
verdict reaches the writer that sent it (another writer answers its status only when it
carries the job, whose tenant the route checks); a late verdict raises
`VerdictPending` with the command's id and is still recorded for its status resource; a
route answers such a write with a 202 pointing at `/v1/job-commands/{id}`."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.unit.services.jobwriter.test_jobwriter import Cluster
from tickwheel.sdk.job_commands import JobCommandWriter, Verdict, VerdictPending
from tickwheel.services.api.routes_job_commands import answers_pending


def drive(cluster: Cluster, stop: threading.Event) -> threading.Thread:
    service = cluster.judge()

    def run() -> None:
        for _ in range(20_000):  # bounded: a few seconds at most
            if stop.is_set():
                break
            service.step()
            stop.wait(0.001)
        service.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_each_writer_gets_its_own_verdicts() -> None:
    cluster = Cluster()
    stop = threading.Event()
    judge = drive(cluster, stop)
    first = JobCommandWriter(clients=cluster.clients, clock=cluster.clock, wait_s=10)
    second = JobCommandWriter(clients=cluster.clients, clock=cluster.clock, wait_s=10)
    try:
        created = first.submit("create", "a", cluster.definition("a"))
        assert (created.outcome, created.current_version) == ("created", 1)
        assert created.definition is not None and created.definition["jobId"] == "a"
        refused = second.submit("create", "a", cluster.definition("a"))
        assert refused.outcome == "exists"
        assert isinstance(second.status(refused.command_id), Verdict)
        # Another writer's verdict that carries the job is answered too (any API instance
        # answers a 202's status resource, the route checks the job's tenant); second read
        # first's verdict before its own (one partition), first reads second's in a moment.
        # Held as the bytes read until a status read asks for it (decision 0179): a writer
        # decodes only the verdicts of its own commands as they come.
        assert isinstance(second._heard[created.command_id], bytes)
        heard = second.status(created.command_id)
        assert isinstance(heard, Verdict) and heard.outcome == "created"
        assert heard.definition is not None and heard.definition["jobId"] == "a"
        for _ in range(500):  # bounded: first's follower reads the later verdict
            if first.status(refused.command_id) is not None:
                break
            threading.Event().wait(0.01)
        seen = first.status(refused.command_id)
        assert isinstance(seen, Verdict) and seen.outcome == "exists"
        assert first.status("never-sent") is None and second.status("never-sent") is None
    finally:
        stop.set()
        judge.join(30)
        first.close()
        second.close()


def test_a_late_verdict_raises_pending_and_is_recorded_when_it_comes() -> None:
    cluster = Cluster()
    service = cluster.judge()  # restored, but not stepped while the writer waits
    writer = JobCommandWriter(clients=cluster.clients, clock=cluster.clock, wait_s=0.05)
    try:
        with pytest.raises(VerdictPending) as late:
            writer.submit("create", "late", cluster.definition("late"))
        command_id = late.value.command_id
        assert writer.status(command_id) == "pending"
        for _ in range(500):  # bounded: the judge answers, the writer's follower reads it
            service.step()
            if isinstance(writer.status(command_id), Verdict):
                break
            threading.Event().wait(0.01)
        verdict = writer.status(command_id)
        assert isinstance(verdict, Verdict) and verdict.outcome == "created"
    finally:
        writer.close()
        service.close()


def test_a_route_answers_a_late_write_with_202_and_its_status_resource() -> None:
    @answers_pending
    def route() -> None:
        raise VerdictPending("c-1", "nightly", 5.0)

    response = route()
    assert response.status_code == 202
    assert response.headers["location"] == "/v1/job-commands/c-1"
    assert json.loads(response.body) == {"commandId": "c-1", "jobId": "nightly",
                                         "status": "pending"}  # fmt: skip


def test_jobs_client_takes_back_the_record_it_returns() -> None:
    """One shape (issue 10 item 6): a record as `get` returns it is a valid `create` body."""
    from tickwheel.sdk.jobs import as_spec, validate_job

    spec = {"jobId": "shape", "type": "http", "cron": "0 3 * * *", "timezone": "Europe/London",
            "payload": {"url": "https://8.8.8.8/hook"}, "startAt": "2030-01-01T00:00:00Z",
            "labels": {"team": "a"}}  # fmt: skip
    record = validate_job(spec, 1_800_000_000_000)
    again = validate_job(as_spec(record), 1_800_000_000_000)
    assert {k: v for k, v in again.items() if k != "updatedAt"} == {
        k: v for k, v in record.items() if k != "updatedAt"
    }
    assert as_spec(spec) is spec  # a spec is taken as it is


def test_the_status_resource_shows_a_verdicts_job_to_its_tenant_only() -> None:
    """Another instance's verdict is answered from the job it carries (decision 0126's status
    resource on any instance): to the job's tenant, and as unknown (404) to any other."""
    from types import SimpleNamespace

    from tickwheel.sdk.jobs import validate_job
    from tickwheel.services.api.problems import Problem
    from tickwheel.services.api.routes_job_commands import job_command

    record = validate_job({"jobId": "nightly", "type": "noop", "cron": "0 3 * * *",
                           "timezone": "Europe/London"}, 1_800_000_000_000)  # fmt: skip
    record["tenantId"] = "acme"
    verdict = Verdict("c-9", "nightly", "created", 1, record, True, None)  # type: ignore[arg-type]
    backend = SimpleNamespace(jobs=SimpleNamespace(command_status=lambda _id: verdict),
                              now_ms=lambda: 1_800_000_000_000)  # fmt: skip

    def asked_by(tenant: str) -> Any:
        principal = SimpleNamespace(tenant_id=tenant)
        request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(backend=backend)),
                                  state=SimpleNamespace(principal=principal))  # fmt: skip
        return job_command(request, "c-9")  # type: ignore[arg-type]

    answer = asked_by("acme")
    assert answer["status"] == "created" and answer["job"]["jobId"] == "nightly"
    with pytest.raises(Problem) as refused:
        asked_by("globex")
    assert refused.value.status == 404 and "acme" not in refused.value.detail
