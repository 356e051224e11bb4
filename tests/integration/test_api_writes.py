"""The API's write path over the real broker: concurrent creates each wait for their own
record's acknowledgement (decision 0100), and still a 201 means the definition is on the
topic and the idempotency record too; a read right after a 201 sees the job."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from tests.integration.api_clients import key
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.services.api.app import create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.door import Door
from tickwheel.services.api.models import SEED_CRON
from tickwheel.services.api.writes import AckedJobsClient
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CREATES = 48


@pytest.fixture
def client(applied_topology: str, kafka_bootstrap: str) -> Iterator[TestClient]:
    jobs = AckedJobsClient(kafka_bootstrap)
    door = Door.open(kafka_bootstrap, Backend(jobs=jobs).clock.now)
    app = create_app(Backend(jobs=jobs, bootstrap=kafka_bootstrap), door)
    token = key(kafka_bootstrap, "acme", "write")
    client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    # The door follows api.keys: wait (bounded) until it knows the key issued a moment ago.
    for _ in range(120):
        if client.get("/v1/jobs/none").status_code != 401:
            break
        time.sleep(0.5)
    yield client
    door.close()
    jobs.catalogue.close()


def test_every_concurrent_201_is_on_the_topic_with_its_idempotency_record(
    client: TestClient, kafka_bootstrap: str
) -> None:
    def create(n: int) -> tuple[int, int]:
        created = client.post("/v1/jobs", json={**SEED_CRON, "jobId": f"w-{n}"},
                              headers={"Idempotency-Key": f"k-{n}"})  # fmt: skip
        seen = client.get(f"/v1/jobs/w-{n}")  # right after its 201: read-your-writes
        return created.status_code, seen.status_code

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(create, range(CREATES)))
    assert answers == [(201, 200)] * CREATES
    on_topic = {r.key for r in read_to_end(topic_name("jobs.definitions"), None, kafka_bootstrap)
                if r.value is not None}  # fmt: skip
    assert {f"w-{n}" for n in range(CREATES)} <= on_topic
    records = [decode(r.value, "IdempotencyRecord")[1]
               for r in read_to_end(topic_name("api.idempotency"), None, kafka_bootstrap)
               if r.value is not None]  # fmt: skip
    assert {r["idempotency_key"] for r in records if r["status"] == 201} >= {
        f"k-{n}" for n in range(CREATES)
    }
    replay = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "w-3"},
                         headers={"Idempotency-Key": "k-3"})  # fmt: skip
    assert replay.status_code == 201 and replay.headers["idempotent-replayed"] == "true"
