"""The API SIGKILLed mid-run: nothing it accepted is lost, and every retry replays.

Four clients create jobs with idempotency keys against the API in a subprocess; once some
creates have been answered, the process is SIGKILLed with others in flight. A new API process
then gets every request again with the same key and body. The invariants:

- every create answered 201 before the kill is answered again with the same body, marked
  `Idempotent-Replayed: true` (its record was acknowledged before the answer left);
- every create that was in flight or refused by the dead process now succeeds;
- the topic holds exactly one job per key: none lost, none made twice.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.api_process import issue_key, start_api
from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.idempotency import derived_job_id
from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port

pytestmark = pytest.mark.acceptance

CREATES = 80
KILL_AFTER = 20


def test_a_sigkilled_api_loses_nothing_it_accepted_and_retries_replay(
    applied_topology: str, tmp_path: Path, kafka_bootstrap: str
) -> None:
    port = free_port()
    token = issue_key("acme", "write")
    auth = {"Authorization": f"Bearer {token}"}
    base = f"http://127.0.0.1:{port}"
    process = start_api(port, tmp_path / "api-1.log")
    answers: dict[int, httpx.Response] = {}
    accepted = threading.Event()
    lock = threading.Lock()

    def create(i: int, client: httpx.Client) -> None:
        body = {**SEED_CRON, "labels": {"n": str(i)}}
        try:
            response = client.post(
                "/v1/jobs", json=body, headers={**auth, "Idempotency-Key": f"k-{i}"}
            )
        except httpx.HTTPError:
            return  # the process died under it: the retry below settles it
        with lock:
            answers[i] = response
            if sum(r.status_code == 201 for r in answers.values()) >= KILL_AFTER:
                accepted.set()

    try:
        with httpx.Client(base_url=base, timeout=30) as client, ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(create, i, client) for i in range(CREATES)]
            assert accepted.wait(120), f"only {len(answers)} answers within 120 s"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            for future in futures:
                future.result(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    before_kill = {i: r for i, r in answers.items() if r.status_code == 201}
    assert KILL_AFTER <= len(before_kill) < CREATES, "the kill came after every create"

    restarted = start_api(port, tmp_path / "api-2.log")
    try:
        retried: dict[int, Any] = {}
        with httpx.Client(base_url=base, timeout=30) as client:
            for i in range(CREATES):
                body = {**SEED_CRON, "labels": {"n": str(i)}}
                retried[i] = client.post(
                    "/v1/jobs", json=body, headers={**auth, "Idempotency-Key": f"k-{i}"}
                )
        for i, response in retried.items():
            assert response.status_code == 201, (i, response.text)
            assert response.json()["jobId"] == derived_job_id("acme", f"k-{i}")
        for i, first in before_kill.items():
            assert retried[i].headers.get("idempotent-replayed") == "true", i
            assert retried[i].json() == first.json(), i
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=20)

    stored = [j for j in JobsClient(kafka_bootstrap).list() if j["tenantId"] == "acme"]
    assert sorted(j["jobId"] for j in stored) == sorted(
        derived_job_id("acme", f"k-{i}") for i in range(CREATES)
    )
    assert all(j["version"] == 1 for j in stored)  # a retry re-created nothing
