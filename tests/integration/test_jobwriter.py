"""The single writer over the real broker (decisions 0099, 0126): the API's writes wait for
its verdicts; two API instances patching one job at the same expectedVersion get exactly one
200 and one 409; a keyed create's idempotency record commits with the job, so a fresh API
(a restart) replays it; a write whose verdict is late is a 202 whose status resource later
says what was decided."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.api_clients import key
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.services.api.app import create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.door import Door
from tickwheel.services.api.models import SEED_CRON
from tickwheel.services.api.writes import AckedJobsClient
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROUNDS = 10


class Judge:
    """The jobwriter service on a thread, over the test's topics."""

    def __init__(self, bootstrap: str) -> None:
        settings = JobWriterSettings(instance="judge", bootstrap=bootstrap)
        self.service = JobWriterService(settings, BrokerClients(bootstrap))
        self.thread = threading.Thread(target=self.service.run, daemon=True)
        self.thread.start()
        wait_for(lambda: len(self.service.partitions) == 6, 90, "the judge's six partitions")

    def stop(self) -> None:
        self.service.stop()
        self.thread.join(60)


def wait_for(condition: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {within_s}s"
        time.sleep(0.1)


@pytest.fixture
def judge(applied_topology: str, kafka_bootstrap: str) -> Iterator[Judge]:
    running = Judge(kafka_bootstrap)
    yield running
    running.stop()


@pytest.fixture
def api(kafka_bootstrap: str) -> Iterator[Callable[..., TestClient]]:
    """`api(token)`: a fresh API instance (its own jobs client, catalogue and door)."""
    made: list[tuple[AckedJobsClient, Door]] = []

    def make(token: str, wait_s: float = 10.0) -> TestClient:
        jobs = AckedJobsClient(kafka_bootstrap)
        jobs.writes.wait_s = wait_s
        backend = Backend(jobs=jobs, bootstrap=kafka_bootstrap)
        door = Door.open(kafka_bootstrap, backend.clock.now)
        made.append((jobs, door))
        client = TestClient(create_app(backend, door), headers={"Authorization": f"Bearer {token}"})
        wait_for(lambda: client.get("/v1/jobs/none").status_code != 401, 60, "the key known")
        return client

    yield make
    for jobs, door in made:
        door.close()
        jobs.close()
        jobs.catalogue.close()


def verdicts(bootstrap: str) -> list[dict[str, Any]]:
    return [decode(r.value or b"", "JobVerdict")[1]
            for r in read_to_end(topic_name("jobs.verdicts"), None, bootstrap)]  # fmt: skip


def test_two_api_instances_patching_at_one_version_get_one_200_and_one_409_per_round(
    judge: Judge, api: Callable[..., TestClient], kafka_bootstrap: str
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    first, second = api(token), api(token)
    for client in (first, second):  # both through the judge: no direct write races it
        assert client.app.state.backend.jobs.writes.commands()  # type: ignore[attr-defined]
    created = first.post("/v1/jobs", json={**SEED_CRON, "jobId": "contested"})
    assert created.status_code == 201, created.text
    version = created.json()["version"]
    with ThreadPoolExecutor(2) as pool:
        for n in range(ROUNDS):
            bodies = [{"expectedVersion": version, "labels": {"round": f"{n}-{side}"}}
                      for side in ("a", "b")]  # fmt: skip
            answers = list(pool.map(lambda c, b: c.patch("/v1/jobs/contested", json=b),
                                    (first, second), bodies))  # fmt: skip
            codes = sorted(a.status_code for a in answers)
            assert codes == [200, 409], [a.text for a in answers]
            conflict = next(a for a in answers if a.status_code == 409).json()
            assert conflict["currentVersion"] == version + 1
            version += 1
    written = [decode(r.value, "JobDefinition")[1]["version"]
               for r in read_to_end(topic_name("jobs.definitions"), None, kafka_bootstrap)
               if r.key == "contested" and r.value is not None]  # fmt: skip
    assert written == list(range(1, ROUNDS + 2))  # one write per round: no gap, no repeat
    judged = [v for v in verdicts(kafka_bootstrap) if v["job_id"] == "contested"]
    assert len({v["command_id"] for v in judged}) == len(judged)  # each command judged once
    # Every accepted write was judged; a 409 came from the judge, or before any command when
    # the instance's catalogue already showed the winner's version.
    outcomes = [v["outcome"] for v in judged]
    assert (outcomes.count("created"), outcomes.count("updated")) == (1, ROUNDS)


def test_a_keyed_create_is_recorded_with_the_job_and_replayed_by_a_fresh_api(
    judge: Judge, api: Callable[..., TestClient], kafka_bootstrap: str
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    first = api(token)
    answer = first.post("/v1/jobs", json={**SEED_CRON, "jobId": "keyed"},
                        headers={"Idempotency-Key": "create-keyed"})  # fmt: skip
    assert answer.status_code == 201, answer.text
    verdict = next(v for v in verdicts(kafka_bootstrap) if v["job_id"] == "keyed")
    assert verdict["outcome"] == "created" and verdict["idempotency_recorded"] is True
    records = [decode(r.value or b"", "IdempotencyRecord")[1]
               for r in read_to_end(topic_name("api.idempotency"), None, kafka_bootstrap)]  # fmt: skip
    assert [(r["idempotency_key"], r["status"]) for r in records] == [("create-keyed", 201)]
    held = first.post("/v1/jobs", json={**SEED_CRON, "jobId": "keyed"},
                      headers={"Idempotency-Key": "create-keyed"})  # fmt: skip
    assert (held.status_code, held.headers["idempotent-replayed"]) == (201, "true")
    assert held.json() == answer.json()  # the same instance, before its view reads it back
    restarted = api(token)  # a fresh instance reads api.idempotency at start
    replay = restarted.post("/v1/jobs", json={**SEED_CRON, "jobId": "keyed"},
                            headers={"Idempotency-Key": "create-keyed"})  # fmt: skip
    assert replay.status_code == 201
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == answer.json()
    other = restarted.post("/v1/jobs", json={**SEED_CRON, "jobId": "keyed", "cron": "1 * * * *"},
                           headers={"Idempotency-Key": "create-keyed"})  # fmt: skip
    assert other.status_code == 422
    assert len([v for v in verdicts(kafka_bootstrap) if v["job_id"] == "keyed"]) == 1


def test_a_late_verdict_is_a_202_whose_status_resource_tells_the_outcome(
    judge: Judge, api: Callable[..., TestClient], kafka_bootstrap: str
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    client = api(token, wait_s=10.0)
    assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": "late"}).status_code == 201
    judge.stop()  # its group member lingers until the session ends: the client still uses it
    client.app.state.backend.jobs.writes.wait_s = 0.5  # type: ignore[attr-defined]
    late = client.patch("/v1/jobs/late", json={"expectedVersion": 1, "enabled": False})
    assert late.status_code == 202, late.text
    location = late.headers["location"]
    assert location.startswith("/v1/job-commands/")
    assert client.get(location).json()["status"] == "pending"
    again = Judge(kafka_bootstrap)
    try:
        wait_for(lambda: client.get(location).json()["status"] != "pending", 60, "the verdict")
        status = client.get(location).json()
        assert (status["status"], status["currentVersion"]) == ("updated", 2)
        assert status["job"]["enabled"] is False
        assert client.get("/v1/jobs/late").json()["version"] == 2  # a read after it sees it
    finally:
        again.stop()


def test_another_instance_answers_a_late_commands_status_for_its_tenant_only(
    judge: Judge, api: Callable[..., TestClient], kafka_bootstrap: str
) -> None:
    """Decision 0166: the command's id names its tenant, so an instance that did not send it
    answers `pending`, then the verdict — a delete's has no job — to that tenant, and a 404
    to another."""
    token = key(kafka_bootstrap, "acme", "write")
    outsider = {"Authorization": f"Bearer {key(kafka_bootstrap, 'globex', 'read')}"}
    first, second = api(token, wait_s=10.0), api(token)
    assert first.post("/v1/jobs", json={**SEED_CRON, "jobId": "gone"}).status_code == 201
    # The second instance reads every verdict from its first write on.
    assert second.post("/v1/jobs", json={**SEED_CRON, "jobId": "seen"}).status_code == 201
    judge.stop()  # its group member lingers: the first instance still sends commands
    first.app.state.backend.jobs.writes.wait_s = 0.5  # type: ignore[attr-defined]
    deleted = first.delete("/v1/jobs/gone")
    created = first.post("/v1/jobs", json={**SEED_CRON, "jobId": "later"})  # an awaited create
    assert (deleted.status_code, created.status_code) == (202, 202), created.text
    locations = [deleted.headers["location"], created.headers["location"]]
    for location in locations:
        assert second.get(location).json()["status"] == "pending"
        assert second.get(location, headers=outsider).status_code == 404
    again = Judge(kafka_bootstrap)
    try:
        wait_for(lambda: all(second.get(at).json()["status"] != "pending" for at in locations),
                 60, "both verdicts on the second instance")  # fmt: skip
        gone, later = (second.get(at).json() for at in locations)
        assert (gone["status"], gone.get("job")) == ("deleted", None)
        assert (later["status"], later["job"]["jobId"]) == ("created", "later")
        assert all(second.get(at, headers=outsider).status_code == 404 for at in locations)
        # An instance started after both verdicts were written finds them on jobs.verdicts
        # (decision 0180), to the same tenant only.
        third = api(token)
        assert [third.get(at).json() for at in locations] == [gone, later]
        assert all(third.get(at, headers=outsider).status_code == 404 for at in locations)
    finally:
        again.stop()
