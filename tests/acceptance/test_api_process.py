"""`python -m tickwheel.services.api` as a user runs it: a subprocess on a free loopback port,
over the real broker; a create/get round trip, then SIGTERM ends it within the bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port

pytestmark = pytest.mark.acceptance


def test_the_api_process_serves_a_round_trip_and_stops_on_sigterm(applied_topology: str) -> None:
    port = free_port()
    env = {**os.environ, "TICKWHEEL_API_PORT": str(port)}
    env.pop("TICKWHEEL_API_HOST", None)  # the default: loopback
    process = subprocess.Popen(
        [sys.executable, "-m", "tickwheel.services.api"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()[0].decode()
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the API did not answer within 30 s"
            time.sleep(0.2)

        created = httpx.post(f"{base}/jobs", json={**SEED_CRON, "jobId": "acc"}, timeout=30)
        assert created.status_code == 201, created.text
        got = httpx.get(f"{base}/v1/jobs/acc", timeout=30)
        assert got.status_code == 200, got.text
        assert got.json()["payloadTemplate"] == {"date": "{{ periodStart | date }}"}
        assert got.json()["version"] == 1
        assert httpx.get(f"{base}/v1/readyz", timeout=10).status_code == 200

        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=15)
        assert code == 0, process.communicate()[0].decode()
        assert time.monotonic() - started < 15
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
