"""Running `python -m tickwheel.services.api` and its key tool as a user does, for the API's
acceptance tests: a subprocess on a free loopback port, over the test's broker and topics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def api_keys(*args: str) -> Any:
    """`tickwheel api-keys ARGS --json`, as a user runs it; its JSON output."""
    done = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", "api-keys", *args, "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def issue_key(tenant: str, *scopes: str) -> str:
    """A key made with `tickwheel api-keys create`."""
    args = ["create", "--tenant", tenant]
    for scope in scopes:
        args += ["--scope", scope]
    token: str = api_keys(*args)["token"]
    return token


def start_api(port: int, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """The API on 127.0.0.1:`port`, its output in `log`, once `/healthz` answers (30 s)."""
    environ = {**os.environ, "TICKWHEEL_API_PORT": str(port), **env}
    environ.pop("TICKWHEEL_API_HOST", None)  # the default: loopback
    out = log.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "tickwheel.services.api"], env=environ, stdout=out,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    # Generous: a loaded machine takes a while to import FastAPI and reach the broker; the wait
    # ends as soon as the API answers.
    deadline = time.monotonic() + 90
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the API did not answer within 90 s"
        time.sleep(0.2)
