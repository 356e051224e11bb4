"""The CLI as a user drives it, in subprocesses: stack up/status/down, the data kept across
restarts, jobs created through the CLI, and bad input refused with a clear message."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tickwheel.stack.broker import free_port
from tickwheel.stack.supervisor import pid_alive

pytestmark = pytest.mark.acceptance


def tickwheel(
    home: Path, *args: str, timeout: float = 180, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KAFKA_BOOTSTRAP_SERVERS", "TICKWHEEL_TOPIC_PREFIX")
    }
    env["TICKWHEEL_HOME"] = str(home / ".tickwheel")
    env["TICKWHEEL_HISTORY_DIR"] = str(home / ".tickwheel" / "history")
    result = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=home, check=False,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(
            f"tickwheel {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def free_port_pair() -> int:
    """A port whose next one is free too (`stack up` puts the controller on port + 1)."""
    for _ in range(50):
        port = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise AssertionError("no two free ports side by side on 127.0.0.1")


def test_stack_up_status_down_and_up_again_keeps_the_data(tmp_path: Path) -> None:
    port = free_port_pair()  # the broker's, and its controller's next to it
    api_port = free_port()
    tickwheel(
        tmp_path, "stack", "up", "--detach", "--kafka-port", str(port), "--timers", "2",
        "--api-port", str(api_port),
    )  # fmt: skip
    pids: list[int] = []
    try:
        status = json.loads(tickwheel(tmp_path, "stack", "status", "--json").stdout)
        assert status["running"] and status["broker"]["healthy"] and status["topology_applied"]
        roles = sorted(p["role"] for p in status["processes"])
        assert roles.count("timer") == 2 and "broker" in roles and "worker" in roles
        assert "watchdog" in roles and "api" in roles and "orchestrator" in roles
        assert all(p["state"] == "running" and p["pid"] for p in status["processes"])
        pids = [p["pid"] for p in status["processes"]]

        env_bootstrap = f"127.0.0.1:{port}"
        created = subprocess.run(
            [sys.executable, "-m", "tickwheel.cli", "jobs", "create", "--definition",
             json.dumps({"jobId": "kept", "type": "noop", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"})],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": env_bootstrap, "TICKWHEEL_TOPIC_PREFIX": ""},
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
    finally:
        tickwheel(tmp_path, "stack", "down")
    assert pids and not [pid for pid in pids if pid_alive(pid)], "stack down left processes behind"
    stopped = tickwheel(tmp_path, "stack", "status", "--json", check=False)
    assert stopped.returncode == 1 and not json.loads(stopped.stdout)["running"]

    tickwheel(
        tmp_path, "stack", "up", "--detach", "--kafka-port", str(port), "--api-port", str(api_port)
    )
    try:
        got = subprocess.run(
            [sys.executable, "-m", "tickwheel.cli", "jobs", "get", "kept"],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}", "TICKWHEEL_TOPIC_PREFIX": ""},
        )  # fmt: skip
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["timezone"] == "Europe/Paris"

        cli_env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
                   "TICKWHEEL_TOPIC_PREFIX": ""}  # fmt: skip
        changes = json.dumps({"cron": "0 10 * * 1-5"})
        updated = subprocess.run(
            [sys.executable, "-m", "tickwheel.cli", "jobs", "update", "kept", "--definition",
             changes, "--expected-version", "1", "--json"],
            capture_output=True, text=True, timeout=60, check=False, env=cli_env,
        )  # fmt: skip
        assert updated.returncode == 0, updated.stderr
        answer = json.loads(updated.stdout)
        assert (answer["version"], answer["cron"]) == (2, "0 10 * * 1-5")
        stale = subprocess.run(
            [sys.executable, "-m", "tickwheel.cli", "jobs", "update", "kept", "--definition",
             changes, "--expected-version", "1"],
            capture_output=True, text=True, timeout=60, check=False, env=cli_env,
        )  # fmt: skip
        assert stale.returncode != 0
        assert "expectedVersion" in stale.stderr and "Traceback" not in stale.stderr
        assert len(stale.stderr.strip().splitlines()) == 1, stale.stderr
    finally:
        tickwheel(tmp_path, "stack", "down")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"type": "noop", "cron": "61 * * * *"},
            "cron: minute field '61': 61 is out of range; accepted: 0-59",
        ),
        ({"type": "noop", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        (
            {"type": "noop", "runAt": "2027-01-01T09:00:00"},
            "runAt: '2027-01-01T09:00:00' has no UTC offset",
        ),
        (
            {"type": "noop", "cron": "* * * * *", "payload": {"blob": "x" * 70_000}},
            "accepted: at most 65536 bytes",
        ),
        ({"cron": "* * * * *"}, "type: required"),
    ],
)
def test_bad_definitions_are_refused_before_anything_is_published(
    tmp_path: Path, spec: dict[str, object], message: str
) -> None:
    # No broker is needed: validation happens before the client connects.
    result = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", "jobs", "create", "--definition", json.dumps(spec)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert message in result.stderr
