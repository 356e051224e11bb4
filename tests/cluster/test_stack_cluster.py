"""`tickwheel stack up --brokers 3` as a user runs it: three KRaft nodes under the stack's
supervisor, every topic with three copies and two in sync, the services serving on it, every
broker in `stack status`, and `stack down` stopping them all."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from tests.acceptance.test_stack_cli import tickwheel
from tickwheel.adapters.kafka.admin import observe
from tickwheel.stack.broker import free_port
from tickwheel.stack.supervisor import pid_alive
from tickwheel.topology import load_topology

pytestmark = [pytest.mark.cluster, pytest.mark.acceptance]


def free_port_run(count: int) -> int:
    """A port whose next `count - 1` are free too (the nodes' client then controller ports)."""
    for _ in range(100):
        first = free_port()
        probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count - 1)]
        try:
            for offset, probe in enumerate(probes, start=1):
                probe.bind(("127.0.0.1", first + offset))
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
        return first
    raise AssertionError(f"no {count} free ports side by side on 127.0.0.1")


def test_stack_up_with_three_brokers_replicates_every_topic_and_down_stops_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port_run(6)
    tickwheel(
        tmp_path,
        "stack",
        "up",
        "--detach",
        "--brokers",
        "3",
        "--kafka-port",
        str(port),
        "--timers",
        "2",
        "--no-api",
        timeout=300,
    )
    pids: list[int] = []
    try:
        status = json.loads(tickwheel(tmp_path, "stack", "status", "--json").stdout)
        brokers = [p for p in status["processes"] if p["role"] == "broker"]
        assert sorted(p["name"] for p in brokers) == ["broker-1", "broker-2", "broker-3"]
        assert status["broker"]["healthy"] and status["topology_applied"]
        bootstrap = status["bootstrap_servers"]
        assert bootstrap == ",".join(f"127.0.0.1:{port + i}" for i in range(3))
        pids = [p["pid"] for p in status["processes"]]

        monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", "")
        monkeypatch.setenv("TICKWHEEL_REPLICATION_FACTOR", "3")
        specs = load_topology()
        seen = observe(specs, bootstrap)
        assert {s.name for s in specs} == set(seen)
        assert {t.replication_factor for t in seen.values()} == {3}
        assert {t.configs["min.insync.replicas"] for t in seen.values()} == {"2"}

        # The services verified that topology and serve on it: none has had to restart.
        time.sleep(5)
        status = json.loads(tickwheel(tmp_path, "stack", "status", "--json").stdout)
        assert all(p["state"] == "running" for p in status["processes"]), status["processes"]
        assert all(p["restarts"] == 0 for p in status["processes"]), status["processes"]
    finally:
        tickwheel(tmp_path, "stack", "down", check=False, timeout=120)
    assert not [pid for pid in pids if pid_alive(pid)], "stack down left processes running"
    assert os.path.isdir(tmp_path / ".tickwheel" / "kafka-cluster" / "node-3")
