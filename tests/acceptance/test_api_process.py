"""`python -m tickwheel.services.api` as a user runs it: a subprocess on a free loopback port,
over the real broker; a create/get round trip, then SIGTERM ends it within the bound."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.acceptance.api_process import api_keys, issue_key, start_api
from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port

pytestmark = pytest.mark.acceptance


def test_the_api_process_serves_a_round_trip_and_stops_on_sigterm(
    applied_topology: str, tmp_path: Path
) -> None:
    port = free_port()
    token = issue_key("acme", "write")
    process = start_api(port, tmp_path / "api.log")
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    try:
        assert httpx.get(f"{base}/jobs", timeout=30).status_code == 401
        created = httpx.post(
            f"{base}/jobs", json={**SEED_CRON, "jobId": "acc"}, headers=auth, timeout=30
        )
        assert created.status_code == 201, created.text
        got = httpx.get(f"{base}/v1/jobs/acc", headers=auth, timeout=30)
        assert got.status_code == 200, got.text
        assert got.json()["payloadTemplate"] == {"date": "{{ periodStart | date }}"}
        assert got.json()["version"] == 1
        assert httpx.get(f"{base}/v1/readyz", timeout=10).status_code == 200

        # The key tool lists the key without its secret; a revoked key stops working.
        key_id = token.split("_")[1]
        listed = {k["key_id"]: k for k in api_keys("list")}
        assert listed[key_id]["tenant_id"] == "acme" and token not in json.dumps(listed)
        api_keys("revoke", key_id)
        deadline = time.monotonic() + 10  # the API follows api.keys every 2 s
        while httpx.get(f"{base}/v1/jobs/acc", headers=auth, timeout=30).status_code != 401:
            assert time.monotonic() < deadline, "a revoked key still works after 10 s"
            time.sleep(0.2)

        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=15)
        assert code == 0, (tmp_path / "api.log").read_text()
        assert time.monotonic() - started < 15
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
