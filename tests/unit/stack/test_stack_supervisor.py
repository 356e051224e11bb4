"""The stack supervisor never leaves a process behind: SIGTERM to all, SIGKILL past a bound."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tickwheel.stack import supervisor
from tickwheel.stack.supervisor import ProcessSpec, StackOptions, Supervisor, pid_alive

STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(600)"
)
POLITE = "import time; print('up', flush=True); time.sleep(600)"


def wait_until_up(log: Path) -> None:
    deadline = time.monotonic() + 20
    while "up" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)


def test_stop_kills_what_ignores_sigterm_and_stops_everything_in_one_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_HOME", str(tmp_path))
    monkeypatch.setattr(supervisor, "STOP_SERVICES_S", 1.5)
    monkeypatch.setattr(supervisor, "STOP_BROKER_S", 1.5)
    stack = Supervisor(StackOptions())
    supervisor.stack_dir().mkdir(parents=True)
    stack.logs.mkdir(parents=True)
    names = {"stubborn-1": STUBBORN, "stubborn-2": STUBBORN, "polite": POLITE, "broker": STUBBORN}
    for name, code in names.items():
        stack._spawn(ProcessSpec(name=name, role="test", command=[sys.executable, "-c", code]))
    for name in names:
        wait_until_up(stack.logs / f"{name}.log")
    pids = [child.pid for child in stack.children.values()]
    events: list[str] = []
    started = time.monotonic()
    stack._stop_all(events.append)
    took = time.monotonic() - started
    assert not [pid for pid in pids if pid_alive(pid)]
    # Services share one bound, then the broker has its own: never one bound per process.
    assert took < 1.5 + 1.5 + 3, took
    assert sum("did not stop" in e for e in events) == 3, events
    assert not any("polite" in e and "did not stop" in e for e in events)
    assert all(s.state == "stopped" and s.pid is None for s in stack.statuses.values())


def test_the_stack_runs_the_single_writer_before_the_api() -> None:
    from tickwheel.stack.services import service_specs

    specs = service_specs(StackOptions(), "127.0.0.1:9092")
    roles = [spec.role for spec in specs]
    assert "jobwriter" in roles
    assert roles.index("jobwriter") < roles.index("api")
    writer = next(spec for spec in specs if spec.role == "jobwriter")
    assert writer.command[1:] == ["-m", "tickwheel.services.jobwriter", "--instance", "jobwriter"]
    assert "jobwriter" not in [s.role for s in service_specs(StackOptions(jobwriter=False), "x")]
