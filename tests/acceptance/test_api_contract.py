"""Issue 13's contract tests against the API in a subprocess, as a client meets it.

- pagination over 1,000+ jobs, with creates interleaved between the pages, has no duplicate
  and no gap among the jobs that existed before it started;
- a private-address `http` target is refused at create (the SSRF guard at the door);
- another tenant's job is a 404 and absent from lists; a read-only key gets 403 on writes;
- `/v1/docs` and `/v1/redoc` reference no non-loopback URL.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.acceptance.api_process import issue_key, start_api
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port
from tickwheel.topology import topic_name

pytestmark = pytest.mark.acceptance

EXISTING = 1_050
PAGE = 100


@pytest.fixture
def base(applied_topology: str, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = start_api(port, tmp_path / "api.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def seed_jobs(bootstrap: str, tenant: str, count: int) -> list[str]:
    """`count` valid definitions of `tenant`, published at once (the SDK one by one would
    spend the test's time on partition reads, not on the pagination under test)."""
    producer = EventProducer(bootstrap)
    ids = []
    for n in range(count):
        job_id = f"page-{n:05d}"
        spec = {"jobId": job_id, "type": "noop", "cron": "0 2 * * *", "tenantId": tenant}
        producer.send(topic_name("jobs.definitions"), job_id,
                      encode("JobDefinition", validate_job(spec, 1_796_000_000_000)))  # fmt: skip
        ids.append(job_id)
    producer.flush()
    return ids


def test_pagination_with_interleaved_creates_has_no_duplicates_or_gaps(
    base: str, kafka_bootstrap: str
) -> None:
    existing = seed_jobs(kafka_bootstrap, "acme", EXISTING)
    auth = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    seen: list[str] = []
    cursor = None
    with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
        for page in range(EXISTING // PAGE + 10):
            params = {"limit": str(PAGE), **({"cursor": cursor} if cursor else {})}
            answer = client.get("/v1/jobs", params=params)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            seen += [job["jobId"] for job in body["items"]]
            # Between pages, jobs land before and after the cursor: neither may shift a page.
            for name in (f"page-{page:05d}-a", f"zz-{page:03d}"):
                created = client.post("/v1/jobs", json={**SEED_CRON, "jobId": name})
                assert created.status_code == 201, created.text
            cursor = body["nextCursor"]
            if cursor is None:
                assert "link" not in answer.headers
                break
            assert f"cursor={cursor}" in answer.headers["link"]
        else:
            pytest.fail("the pages did not end")
    assert len(seen) == len(set(seen)), "a job was listed twice"
    assert [j for j in seen if j in set(existing)] == existing, "a job that existed was missed"


def test_a_private_http_target_is_refused_at_create(base: str) -> None:
    auth = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    for url in ("http://10.1.2.3/hook", "http://127.0.0.1:8780/v1/jobs", "http://169.254.169.254/"):
        answer = httpx.post(f"{base}/v1/jobs", headers=auth, timeout=30, json={
            "type": "http", "cron": "0 2 * * *", "payload": {"url": url}})  # fmt: skip
        assert answer.status_code == 422, (url, answer.text)
        assert answer.json()["errors"][0]["pointer"] == "/payload/url", url


def test_tenants_and_scopes_at_the_door(base: str) -> None:
    acme = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    globex = {"Authorization": f"Bearer {issue_key('globex', 'read')}"}
    created = httpx.post(f"{base}/jobs", json={**SEED_CRON, "jobId": "mine"}, headers=acme,
                         timeout=30)  # fmt: skip
    assert created.status_code == 201, created.text
    assert httpx.get(f"{base}/jobs/mine", headers=globex, timeout=30).status_code == 404
    listed = httpx.get(f"{base}/jobs", headers=globex, timeout=30).json()["items"]
    assert "mine" not in [j["jobId"] for j in listed]
    refused = httpx.post(f"{base}/jobs", json=SEED_CRON, headers=globex, timeout=30)
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"


def test_the_docs_reference_no_outside_url(base: str) -> None:
    for page in ("/v1/docs", "/v1/redoc"):
        html = httpx.get(f"{base}{page}", timeout=30)
        assert html.status_code == 200
        assert not re.search(r"https?://(?!127\.0\.0\.1|localhost)", html.text), page
        for reference in re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", html.text):
            assert reference.startswith("/"), f"{page} loads {reference}"
            assert httpx.get(f"{base}{reference}", timeout=30).status_code == 200, reference
