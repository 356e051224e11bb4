"""The HTTP API in-process (FastAPI's TestClient) over the real broker, topics of its own.

Each test drives the routes as a client would, and checks what the SDK then reads back from
the broker, so a route that answers well but publishes nothing cannot pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import OpenAPIV31SpecValidator

from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.app import create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.keys import create_key
from tickwheel.services.api.models import SEED_CRON, SEED_ONE_OFF

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"


@pytest.fixture
def jobs(applied_topology: str, kafka_bootstrap: str) -> JobsClient:
    return JobsClient(kafka_bootstrap)


@pytest.fixture
def client(jobs: JobsClient, kafka_bootstrap: str) -> Iterator[TestClient]:
    # An admin key of the tenant `default`, whose jobs are also the SDK's (no tenantId).
    # The backend the service runs: every read below a create, patch or delete answers from
    # the followed catalogue and must see that write at once (decision 0139).
    token, _ = create_key("default", ["admin"], bootstrap=kafka_bootstrap, now_ms=1)
    backend = Backend.from_env(kafka_bootstrap)
    app = create_app(backend)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app, raise_server_exceptions=False, headers=headers) as test_client:
        yield test_client
    app.state.door.close()
    backend.jobs.close()  # type: ignore[attr-defined]


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["code"] == code
    assert body["type"] == f"urn:tickwheel:problem:{code}"
    assert body["requestId"] == response.headers["x-request-id"]
    return body


def test_the_seed_bodies_verbatim_are_created_and_read_back(
    client: TestClient, jobs: JobsClient
) -> None:
    once = client.post("/jobs", json=SEED_ONE_OFF)
    assert once.status_code == 201, once.text
    assert once.json()["scheduledFor"] == "2026-08-01T02:00:00Z"
    daily = client.post("/v1/jobs", json=SEED_CRON)
    assert daily.status_code == 201, daily.text
    job_id = daily.json()["jobId"]
    assert daily.headers["location"] == f"/v1/jobs/{job_id}"
    assert daily.headers["etag"] == '"v1"'
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT02:00:00Z", daily.json()["nextRun"])

    stored = jobs.get(job_id)
    assert stored["cron"] == "0 2 * * *" and stored["timezone"] == "Europe/London"
    # An object template is stored as the core's template text, and shown as the object.
    assert stored["payloadTemplate"] == '{"date":"{{ periodStart | date }}"}'
    got = client.get(f"/jobs/{job_id}")
    assert got.status_code == 200
    assert got.json()["payloadTemplate"] == {"date": "{{ periodStart | date }}"}
    assert got.json()["expectedMaxInterval"] == "26h"
    assert client.get(f"/v1/jobs/{job_id}", headers={"If-None-Match": '"v1"'}).status_code == 304


def test_a_bad_cron_is_a_422_problem_pointing_at_the_field(client: TestClient) -> None:
    body = assert_problem(
        client.post("/v1/jobs", json={**SEED_CRON, "cron": "61 2 * * *"}), 422, "validation-error"
    )
    assert body["errors"][0]["pointer"] == "/cron"
    assert "accepted: 0-59" in body["errors"][0]["detail"]
    # The same error in seed 003's words points at its own field name.
    schedule = {"expression": "0 2 * *", "timeZone": "UTC", "payload": {}, "target": "noop"}
    body = assert_problem(client.post("/schedules", json=schedule), 422, "validation-error")
    assert body["errors"][0]["pointer"] == "/expression"
    # A JSON type the core would refuse is refused before it, also with a pointer.
    body = assert_problem(
        client.post("/v1/jobs", json={**SEED_CRON, "maxAttempts": "5"}), 422, "validation-error"
    )
    assert body["errors"][0]["pointer"] == "/maxAttempts"
    malformed = client.post(
        "/v1/jobs", content=b"{cron", headers={"content-type": "application/json"}
    )
    assert_problem(malformed, 400, "malformed-request")


def test_an_unknown_job_is_a_404_problem(client: TestClient) -> None:
    for path in ("/jobs/no-such-job", "/v1/jobs/no-such-job", "/v1/schedules/no-such-job"):
        body = assert_problem(client.get(path), 404, "not-found")
        assert "no-such-job" in body["detail"]
    assert_problem(client.delete("/v1/jobs/no-such-job"), 404, "not-found")
    assert_problem(client.post("/v1/jobs/no-such-job/trigger"), 404, "not-found")


def test_patch_with_a_stale_version_is_a_409_naming_the_current_one(
    client: TestClient, jobs: JobsClient
) -> None:
    job_id = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "patched"}).json()["jobId"]
    moved = client.patch(f"/v1/jobs/{job_id}", json={"expectedVersion": 1, "cron": "30 2 * * *"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["version"] == 2 and moved.headers["etag"] == '"v2"'

    stale = client.patch(f"/v1/jobs/{job_id}", json={"expectedVersion": 1, "cron": "0 3 * * *"})
    body = assert_problem(stale, 409, "version-conflict")
    assert body["currentVersion"] == 2
    assert body["errors"][0]["pointer"] == "/expectedVersion"
    assert jobs.get(job_id)["cron"] == "30 2 * * *"  # the stale write published nothing

    precondition = client.patch(
        f"/v1/jobs/{job_id}", json={"enabled": False}, headers={"If-Match": '"v1"'}
    )
    assert assert_problem(precondition, 412, "precondition-failed")["currentVersion"] == 2
    immutable = client.patch(f"/v1/jobs/{job_id}", json={"tenantId": "other"})
    assert assert_problem(immutable, 422, "validation-error")["errors"][0]["pointer"] == "/tenantId"


def test_seed_003_schedules_create_and_patch(client: TestClient, jobs: JobsClient) -> None:
    created = client.post(
        "/schedules",
        json={"expression": "0 2 * * *", "timeZone": "Europe/London",
              "payload": {"bucket": "exports"}, "target": "export"},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    schedule_id = created.json()["id"]
    patched = client.patch(
        f"/schedules/{schedule_id}",
        json={"expectedVersion": 1, "enabled": False, "expression": "0 3 * * *"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["version"] == 2 and patched.json()["enabled"] is False
    stored = jobs.get(schedule_id)
    assert (stored["type"], stored["cron"], stored["enabled"]) == ("export", "0 3 * * *", False)
    stale = client.patch(f"/schedules/{schedule_id}", json={"expectedVersion": 1, "enabled": True})
    assert assert_problem(stale, 409, "version-conflict")["currentVersion"] == 2


def test_backfill_dry_run_counts_the_slots_and_sends_nothing(
    client: TestClient, jobs: JobsClient
) -> None:
    job_id = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "backfilled"}).json()["jobId"]
    window = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-12T00:00:00Z"}
    dry = client.post(f"/v1/jobs/{job_id}/backfill", json={**window, "dryRun": True})
    assert dry.status_code == 200, dry.text
    # 02:00 London (GMT in November) on the 1st through the 11th.
    assert dry.json() == {"jobId": job_id, "slots": 11, "dryRun": True}
    real = client.post(f"/jobs/{job_id}/backfill", json=window)
    assert real.status_code == 202, real.text
    assert real.json()["slots"] == 11 and real.json()["commandId"]
    backwards = client.post(
        f"/v1/jobs/{job_id}/backfill", json={"from": window["to"], "to": window["from"]}
    )
    assert assert_problem(backwards, 422, "validation-error")["errors"][0]["pointer"] == "/to"


def test_a_keyed_backfill_retried_after_its_answer_was_lost_names_the_same_command(
    client: TestClient, jobs: JobsClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decision 0121 derives a backfill's executions from its command: a retry that made a new
    # command would run every slot again. A keyed one's command comes from its key.
    job_id = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "refilled"}).json()["jobId"]
    window = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-03T00:00:00Z"}
    keyed = {"Idempotency-Key": "refill-nov"}
    first = client.post(f"/v1/jobs/{job_id}/backfill", json=window, headers=keyed)
    assert first.status_code == 202, first.text
    # The crash between the publish and the record: the store has no answer to replay.
    store = client.app.state.door.idempotency  # type: ignore[attr-defined]
    monkeypatch.setattr(store, "recorded", lambda slot: None)
    again = client.post(f"/v1/jobs/{job_id}/backfill", json=window, headers=keyed)
    assert again.status_code == 202, again.text
    assert again.json()["commandId"] == first.json()["commandId"]
    other = client.post(
        f"/v1/jobs/{job_id}/backfill", json=window, headers={"Idempotency-Key": "refill-2"}
    )
    unkeyed = client.post(f"/v1/jobs/{job_id}/backfill", json=window)
    commands = {first.json()["commandId"], other.json()["commandId"], unkeyed.json()["commandId"]}
    assert len(commands) == 3  # another key, or none, is another backfill


def test_pause_with_a_reason_resume_trigger_delete(client: TestClient, jobs: JobsClient) -> None:
    job_id = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "lifecycle"}).json()["jobId"]
    paused = client.post(f"/v1/jobs/{job_id}/pause", json={"reason": "upstream outage"})
    assert paused.status_code == 200 and paused.json()["enabled"] is False
    assert jobs.get(job_id)["labels"] == {"tickwheel/paused-reason": "upstream outage"}
    resumed = client.post(f"/v1/jobs/{job_id}/resume")
    assert resumed.json()["enabled"] is True and jobs.get(job_id)["labels"] == {}
    triggered = client.post(f"/jobs/{job_id}/trigger")
    assert triggered.status_code == 202 and triggered.json()["kind"] == "trigger"
    assert client.delete(f"/v1/jobs/{job_id}").status_code == 204
    assert_problem(client.get(f"/v1/jobs/{job_id}"), 404, "not-found")


def test_list_pages_by_cursor_without_duplicates_or_gaps(client: TestClient) -> None:
    ids = {f"page-{n}" for n in range(5)}
    for job_id in sorted(ids):
        assert client.post("/v1/jobs", json={**SEED_CRON, "jobId": job_id}).status_code == 201
    seen: list[str] = []
    url: str | None = "/v1/jobs?limit=2"
    for _ in range(10):  # bounded: 5 jobs are 3 pages
        if url is None:
            break
        page = client.get(url)
        assert page.status_code == 200, page.text
        seen += [item["jobId"] for item in page.json()["items"]]
        cursor = page.json()["nextCursor"]
        url = f"/v1/jobs?limit=2&cursor={cursor}" if cursor else None
    assert seen == sorted(ids)
    assert_problem(client.get("/v1/jobs?limit=501"), 422, "validation-error")
    assert_problem(client.get("/v1/jobs?cursor=garbage"), 422, "validation-error")


def test_preview_health_and_readiness(client: TestClient) -> None:
    preview = client.get("/v1/schedules/preview?cron=30+1+*+*+*&timezone=Europe/London&count=3")
    assert preview.status_code == 200, preview.text
    assert len(preview.json()["occurrences"]) == 3
    bad = client.get("/v1/schedules/preview?cron=30+1+*+*")
    assert assert_problem(bad, 422, "validation-error")["errors"][0]["parameter"] == "cron"
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/v1/readyz").json() == {"status": "ready"}


def test_executions_timeline_404_and_cancel(
    client: TestClient, tmp_path: Path, kafka_bootstrap: str
) -> None:
    from tickwheel.adapters.clickhouse import HistorySettings, open_history_store

    store = open_history_store(HistorySettings(history_dir=tmp_path / "history"))
    store.migrate()

    class Unclosed:
        def query(self, sql: str, params: Any = None) -> Any:
            return store.query(sql, params)

        def close(self) -> None:
            pass

    backend: Backend = client.app.state.backend  # type: ignore[attr-defined]
    backend.open_history = Unclosed
    try:
        for path in ("/v1/executions/nope", "/runs/nope"):
            assert "nope" in assert_problem(client.get(path), 404, "not-found")["detail"]
    finally:
        store.close()
    # Not in the history yet: the body names the (tenant's own) job it belongs to.
    job_id = client.post("/v1/jobs", json={**SEED_CRON, "jobId": "to-cancel"}).json()["jobId"]
    cancelled = client.post(
        "/v1/executions/exec-1/cancel", json={"reason": "closed", "jobId": job_id}
    )
    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["executionId"] == "exec-1" and cancelled.json()["reason"] == "closed"


def test_the_openapi_document_is_3_1_with_an_example_for_every_operation(
    client: TestClient,
) -> None:
    document = client.get("/v1/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    OpenAPIV31SpecValidator(document).validate()
    missing = []
    for path, item in document["paths"].items():
        assert path.startswith("/v1/"), path
        for method, operation in item.items():
            text = repr(operation)
            if "'example'" not in text and "'examples'" not in text:
                missing.append(f"{method.upper()} {path}")
    assert missing == []


def test_the_docs_pages_load_nothing_from_outside(client: TestClient) -> None:
    for page in ("/v1/docs", "/v1/redoc"):
        html = client.get(page)
        assert html.status_code == 200
        references = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", html.text)
        assert references, html.text
        for reference in references:
            assert reference.startswith("/"), f"{page} loads {reference}"
            assert client.get(reference).status_code == 200, reference
        assert not re.search(r"https?://(?!127\.0\.0\.1|localhost)", html.text), html.text


def test_list_filters_by_type_enabled_label_owner_and_id_and_pages_keep_them(
    client: TestClient,
) -> None:
    for job_id, job_type, labels in (
        ("f-a", "export", {"team": "pay", "owner": "ann"}),
        ("f-b", "export", {"team": "ops"}),
        ("f-c", "report", {"team": "pay", "owner": "bob"}),
        ("g-d", "export", {"team": "pay", "owner": "ann"}),
    ):
        body = {"jobId": job_id, "type": job_type, "cron": "0 2 * * *", "labels": labels}
        assert client.post("/v1/jobs", json=body).status_code == 201
    client.post("/v1/jobs/g-d/pause")

    def ids(**params: Any) -> list[str]:
        answer = client.get("/v1/jobs", params=params)
        assert answer.status_code == 200, answer.text
        return [job["jobId"] for job in answer.json()["items"]]

    assert ids(type="export") == ["f-a", "f-b", "g-d"]
    assert ids(type="export", enabled="true") == ["f-a", "f-b"]
    assert ids(label=["team:pay"]) == ["f-a", "f-c", "g-d"]
    assert ids(label=["team:pay"], owner="ann") == ["f-a", "g-d"]
    assert ids(q="f-", label="team:pay") == ["f-a", "f-c"]
    first = client.get("/v1/jobs", params={"type": "export", "limit": 1})
    link = first.headers["link"]
    assert "type=export" in link and "limit=1" in link
    following = client.get(link[1 : link.index(">")])
    assert [job["jobId"] for job in following.json()["items"]] == ["f-b"]
    bad = client.get("/v1/jobs", params={"label": "no-colon"})
    assert assert_problem(bad, 422, "validation-error")["errors"][0]["parameter"] == "label"
