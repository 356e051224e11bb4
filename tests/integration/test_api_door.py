"""The API's door over the real broker: keys, scopes, tenants, idempotency, limits, audit.

Keys are issued into the test's own `api.keys` topic and the app reads them from there, as a
deployed API does; what a route publishes is read back with the SDK or from the topics.
"""

from __future__ import annotations

import pytest

from tests.integration.api_clients import Connect, connect, jobs, key, problem
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.clock import FakeClock
from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.door import Door
from tickwheel.services.api.idempotency import derived_job_id
from tickwheel.services.api.keys import revoke_key
from tickwheel.services.api.limits import RateSettings
from tickwheel.services.api.models import SEED_CRON, SEED_ONE_OFF
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
__all__ = ["connect", "jobs"]  # fixtures, imported for pytest to find


def test_no_key_a_bad_key_and_a_revoked_key_are_401(connect: Connect, kafka_bootstrap: str) -> None:
    anonymous = connect()
    response = anonymous.get("/v1/jobs")
    problem(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert anonymous.get("/healthz").status_code == 200  # health asks for no key
    token = key(kafka_bootstrap, "acme", "read")
    mistyped = token[:-1] + ("0" if token[-1] != "0" else "1")
    problem(connect(mistyped).get("/v1/jobs"), 401, "unauthenticated")
    client = connect(token)
    assert client.get("/v1/jobs").status_code == 200
    revoke_key(token.split("_")[1], bootstrap=kafka_bootstrap, now_ms=2)
    problem(connect(token).get("/v1/jobs"), 401, "unauthenticated")


def test_a_read_only_key_reads_and_gets_403_on_every_write(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    writer = connect(key(kafka_bootstrap, "acme", "write"))
    job_id = writer.post("/v1/jobs", json={**SEED_CRON, "jobId": "ro-job"}).json()["jobId"]
    reader = connect(key(kafka_bootstrap, "acme", "read"))
    assert reader.get(f"/v1/jobs/{job_id}").status_code == 200
    for method, path, body in (
        ("POST", "/v1/jobs", SEED_CRON),
        ("PATCH", f"/v1/jobs/{job_id}", {"enabled": False}),
        ("DELETE", f"/v1/jobs/{job_id}", None),
        ("POST", f"/jobs/{job_id}/trigger", None),
        ("POST", "/schedules", {"expression": "0 2 * * *", "target": "noop"}),
    ):
        problem(reader.request(method, path, json=body), 403, "forbidden")
    assert jobs.get(job_id)["version"] == 1 and jobs.get(job_id)["enabled"] is True
    # Dead-letter changes need admin; a writer has none.
    problem(writer.post("/v1/dead-letters/x/retry"), 403, "forbidden")


def test_another_tenants_job_is_404_and_absent_from_lists(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    acme = connect(key(kafka_bootstrap, "acme", "write"))
    globex = connect(key(kafka_bootstrap, "globex", "admin"))
    created = acme.post("/v1/jobs", json={**SEED_CRON, "jobId": "acme-only"})
    assert created.status_code == 201, created.text
    assert jobs.get("acme-only")["tenantId"] == "acme"
    assert [j["jobId"] for j in acme.get("/v1/jobs").json()["items"]] == ["acme-only"]
    assert globex.get("/v1/jobs").json()["items"] == []
    for method, path, body in (
        ("GET", "/v1/jobs/acme-only", None),
        ("GET", "/v1/schedules/acme-only", None),
        ("PATCH", "/v1/jobs/acme-only", {"enabled": False}),
        ("DELETE", "/v1/jobs/acme-only", None),
        ("POST", "/v1/jobs/acme-only/trigger", None),
        ("POST", "/v1/jobs/acme-only/pause", {"reason": "x"}),
        ("POST", "/v1/executions/e-1/cancel", {"jobId": "acme-only"}),
    ):
        body_of = problem(globex.request(method, path, json=body), 404, "not-found")
        assert "acme" not in body_of["detail"].replace("acme-only", "")
    assert jobs.get("acme-only")["version"] == 1  # nothing the other tenant sent took effect
    refused = globex.post("/v1/jobs", json={**SEED_CRON, "tenantId": "acme"})
    assert problem(refused, 422, "validation-error")["errors"][0]["pointer"] == "/tenantId"


def test_an_idempotent_retry_replays_and_survives_a_restart(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    client = connect(token)
    headers = {"Idempotency-Key": "create-1"}
    first = client.post("/v1/jobs", json=SEED_CRON, headers=headers)
    assert first.status_code == 201, first.text
    assert first.json()["jobId"] == derived_job_id("acme", "create-1")
    again = client.post("/jobs", json=SEED_CRON, headers=headers)  # also without /v1
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["location"] == first.headers["location"]
    # A restarted API (a fresh app, reading api.idempotency) replays it too.
    restarted = connect(token).post("/v1/jobs", json=SEED_CRON, headers=headers)
    assert restarted.status_code == 201 and restarted.json() == first.json()
    assert restarted.headers["idempotent-replayed"] == "true"
    assert [j["jobId"] for j in jobs.list()] == [first.json()["jobId"]]

    other = client.post("/v1/jobs", json={**SEED_CRON, "cron": "0 3 * * *"}, headers=headers)
    problem(other, 422, "idempotency-key-reused")
    # Keys are per tenant: another tenant's same key is a request of its own.
    elsewhere = connect(key(kafka_bootstrap, "globex", "write"))
    assert elsewhere.post("/v1/jobs", json=SEED_CRON, headers=headers).status_code == 201
    # Seed 000's body key is the same thing as the header; both given, they must agree.
    seed = client.post("/v1/jobs", json=SEED_ONE_OFF)
    assert seed.status_code == 201
    assert client.post("/v1/jobs", json=SEED_ONE_OFF).headers["idempotent-replayed"] == "true"
    mismatch = client.post("/v1/jobs", json=SEED_ONE_OFF, headers={"Idempotency-Key": "other"})
    assert problem(mismatch, 422, "validation-error")["errors"][0]["pointer"] == "/idempotencyKey"


def test_a_create_whose_record_was_lost_is_not_made_twice(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    headers = {"Idempotency-Key": "lost-record"}
    first = connect(token).post("/v1/jobs", json=SEED_CRON, headers=headers)
    assert first.status_code == 201
    # The crash between the job's write and its record: the record is gone.
    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("api.idempotency"), "acme/lost-record", None)
    producer.flush()
    retry = connect(token).post("/v1/jobs", json=SEED_CRON, headers=headers)
    assert retry.status_code == 201, retry.text
    assert retry.json()["jobId"] == first.json()["jobId"]
    assert len(jobs.list()) == 1


def test_over_the_rate_is_429_with_retry_after_until_tokens_return(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    clock = FakeClock()
    rates = RateSettings(reads_per_s=1, read_burst=2, writes_per_s=0.5, write_burst=1)
    door = Door.open(kafka_bootstrap, clock.now, rates=rates)
    client = connect(key(kafka_bootstrap, "acme", "write"), door=door, clock=clock)
    assert client.get("/v1/jobs").status_code == 200
    assert client.get("/v1/jobs").status_code == 200
    refused = client.get("/v1/jobs")
    problem(refused, 429, "rate-limited")
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["ratelimit-policy"].startswith('"read"')
    # Writes have a bucket of their own: the reads spent none of it.
    assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": "r1"}).status_code == 201
    write_refused = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "r2"})
    assert (
        problem(write_refused, 429, "rate-limited") and write_refused.headers["retry-after"] == "2"
    )
    assert [j["jobId"] for j in jobs.list()] == ["r1"]  # the refused create published nothing
    clock.advance(2.0)
    assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": "r2"}).status_code == 201
    # Another tenant is not slowed by this one.
    other = connect(key(kafka_bootstrap, "globex", "read"), door=door, clock=clock)
    assert other.get("/v1/jobs").status_code == 200


def test_a_body_over_1_mib_is_413_and_over_256_kib_warned(
    connect: Connect, kafka_bootstrap: str
) -> None:
    client = connect(key(kafka_bootstrap, "acme", "write"))
    big = {**SEED_CRON, "description": "x" * (1024 * 1024)}
    problem(client.post("/v1/jobs", json=big), 413, "payload-too-large")
    chunked = client.post(
        "/v1/jobs",
        content=iter([b'{"type": "noop", "labels": {"a": "', b"y" * (1024 * 1024), b'"}}']),
        headers={"content-type": "application/json"},
    )
    problem(chunked, 413, "payload-too-large")
    warned = client.post("/v1/jobs", json={**SEED_CRON, "payload": {"blob": "z" * 300_000}})
    assert "300" in warned.headers["tickwheel-warning"]
    assert warned.status_code == 422  # the core's payload limit still judges the payload


def test_every_change_is_audited_with_its_request_id(
    connect: Connect, kafka_bootstrap: str
) -> None:
    token = key(kafka_bootstrap, "acme", "write")
    client = connect(token)
    created = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "audited"},
                          headers={"Idempotency-Key": "k-audit", "X-Request-Id": "req-42"})  # fmt: skip
    assert created.status_code == 201
    client.delete("/v1/jobs/audited")
    client.app.state.door.audit.close()  # type: ignore[attr-defined]
    events = [decode(r.value, "ApiAuditEvent")[1]
              for r in read_to_end(topic_name("api.audit"), None, kafka_bootstrap) if r.value]  # fmt: skip
    assert [(e["method"], e["path"], e["status"]) for e in events] == [
        ("POST", "/v1/jobs", 201), ("DELETE", "/v1/jobs/audited", 204)]  # fmt: skip
    assert events[0]["request_id"] == "req-42" and events[0]["idempotency_key"] == "k-audit"
    assert {e["tenant_id"] for e in events} == {"acme"}
    assert {e["key_id"] for e in events} == {token.split("_")[1]}


def test_metrics_count_requests_by_route_template(connect: Connect, kafka_bootstrap: str) -> None:
    client = connect(key(kafka_bootstrap, "acme", "read"))
    client.get("/v1/jobs/nope-1")
    client.get("/v1/jobs/nope-2")
    text = client.get("/metrics").text
    assert (
        'tickwheel_api_requests_total{method="GET",route="/jobs/{job_id}",status="404"} 2.0' in text
    )
    assert "nope-1" not in text


def test_the_development_mode_needs_no_key_and_acts_for_default(
    connect: Connect, kafka_bootstrap: str, jobs: JobsClient
) -> None:
    client = connect(door=Door.open(kafka_bootstrap, FakeClock().now, mode="off"))
    assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": "dev"}).status_code == 201
    assert jobs.get("dev")["tenantId"] == "default"


def test_every_get_has_an_etag_and_if_none_match_answers_304_until_it_changes(
    connect: Connect, kafka_bootstrap: str
) -> None:
    client = connect(key(kafka_bootstrap, "acme", "write"))
    for path in ("/v1/jobs", "/v1/alerts", "/v1/dead-letters"):
        first = client.get(path)
        tag = first.headers["etag"]
        assert tag.startswith('W/"'), path
        again = client.get(path, headers={"If-None-Match": f'"x", {tag}'})
        assert again.status_code == 304 and again.headers["etag"] == tag and not again.content
    tag = client.get("/v1/jobs").headers["etag"]
    assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": "tagged"}).status_code == 201
    changed = client.get("/v1/jobs", headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    # A job keeps its version as its tag.
    assert client.get("/v1/jobs/tagged").headers["etag"] == '"v1"'
