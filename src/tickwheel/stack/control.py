"""The stack seen from outside its supervisor: where its files are, its status (each pid
checked against the process table), starting a detached supervisor and stopping it."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tickwheel.errors import StackError
from tickwheel.paths import stack_approval_keys_file, state_home
from tickwheel.stack.broker import broker_serves_metadata
from tickwheel.stack.services import STOP_BROKER_S, STOP_SERVICES_S, StackOptions


def stack_dir() -> Path:
    return state_home() / "stack"


def status_path() -> Path:
    return stack_dir() / "status.json"


def pid_path() -> Path:
    return stack_dir() / "supervisor.pid"


def read_status() -> dict[str, Any]:
    """The stack's status, with each recorded pid checked against the live process table."""
    if not status_path().exists():
        return {"running": False, "processes": [], "broker": {"healthy": False}}
    document: dict[str, Any] = json.loads(status_path().read_text())
    supervisor = document.get("supervisor_pid")
    document["running"] = isinstance(supervisor, int) and pid_alive(supervisor)
    for process in document["processes"]:
        if process["pid"] and not pid_alive(process["pid"]):
            process["state"] = "dead"
    if not document["running"]:
        for process in document["processes"]:
            if process["state"] != "dead":
                process["state"] = "stopped"
    document["broker"] = {
        "bootstrap_servers": document.get("bootstrap_servers"),
        "healthy": document["running"] and broker_serves_metadata(document["bootstrap_servers"]),
    }
    return document


def _signal(pid: int, signum: int, group: bool) -> None:
    """Children run in sessions of their own (pid == process group id)."""
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def start_detached(options: StackOptions, timeout: float = 120.0) -> dict[str, Any]:
    """Start a supervisor in its own session and wait until the topology is applied."""
    if pid_path().exists() and pid_alive(int(pid_path().read_text() or 0)):
        raise StackError(f"the stack is already running (supervisor pid {pid_path().read_text()})")
    stack_dir().mkdir(parents=True, exist_ok=True)
    status_path().unlink(missing_ok=True)
    log = (stack_dir() / "supervisor.log").open("ab")
    command = [
        sys.executable,
        "-m",
        "tickwheel.stack.supervisor",
        json.dumps(asdict(options)),
    ]
    child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise StackError(
                f"the stack supervisor exited with {child.returncode}; "
                f"see {stack_dir() / 'supervisor.log'}"
            )
        if status_path().exists():
            status = read_status()
            if status.get("topology_applied"):
                return status
        time.sleep(0.3)
    raise StackError(f"the stack did not come up within {timeout}s")


def stop(timeout: float = STOP_SERVICES_S + STOP_BROKER_S + 15) -> list[int]:
    """Stop the supervisor (which stops its children within its bounds); past `timeout` kill
    it, then kill any child left behind, and wait until none is alive."""
    stopped: list[int] = []
    if pid_path().exists():
        pid = int(pid_path().read_text() or 0)
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if pid_alive(pid):
                _signal(pid, signal.SIGKILL, group=False)
            stopped.append(pid)
        pid_path().unlink(missing_ok=True)
    left: list[int] = []
    if status_path().exists():
        document = json.loads(status_path().read_text())
        for process in document.get("processes", []):
            pid = process.get("pid")
            if pid and pid_alive(pid):
                _signal(pid, signal.SIGKILL, group=True)
                stopped.append(pid)
                left.append(pid)
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    return stopped


def dev_approval_keys() -> str:
    """The development stack's approval keys (`dev:<secret>`): made at its first start and
    kept in its home, readable by its owner only, so that an approval step on `make run`'s
    stack can be given a link and decided from the CLI out of the box (the CLI finds the key
    while the stack runs). Never printed. A deployment sets TICKWHEEL_APPROVAL_KEYS itself."""
    path = stack_approval_keys_file()
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        text = ""
    if not text:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"dev:{secrets.token_urlsafe(32)}"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(text + "\n")
    return text
