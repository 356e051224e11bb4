"""The real processes behind the console's browser tests: a history service (embedded chDB in
a directory of its own), the API in its development mode, and optionally a timer and a
worker, all over the session's broker with topics under a fresh prefix."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.timer_harness import ServiceProcess
from tickwheel.history import read_owner
from tickwheel.sdk.jobs import JobsClient
from tickwheel.stack.broker import free_port


@dataclass
class ConsoleStack:
    base: str
    jobs: JobsClient
    processes: list[ServiceProcess]


def wait_for(predicate: Any, timeout: float, what: str, process: ServiceProcess) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert process.process is not None and process.process.poll() is None, (
            f"{process.name} exited: {process.log_path.read_text(errors='replace')[-2000:]}"
        )
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def console_stack(
    bootstrap: str, home: Path, *, runs: bool = False, env: dict[str, str] | None = None
) -> Iterator[ConsoleStack]:
    """The processes up and answering; `runs` adds a timer, a worker, the workflow
    orchestrator and the watchdog (else no slot of a job ever fires and no workflow moves);
    `env` adds to (or overrides) the services' environment, e.g. `TICKWHEEL_API_AUTH=keys`."""
    from tickwheel.adapters.kafka.admin import apply_topology

    port = free_port()
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "TICKWHEEL_TOPIC_PREFIX": f"t{uuid.uuid4().hex[:10]}.",
        "TICKWHEEL_HISTORY_DIR": str(home / "history"),
        "TICKWHEEL_HOME": str(home),
        "TICKWHEEL_API_AUTH": "off",
        "TICKWHEEL_API_PORT": str(port),
        "TICKWHEEL_TIMER_TICK_MS": "50",
        "TICKWHEEL_RETRY_BASE_MS": "200",
        # The console signs an approval's token with the first key; the SDK checks it.
        # A dead letter older than a second is an alert (the console's ack test needs one).
        "TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S": "1",
        "TICKWHEEL_APPROVAL_KEYS": "console-test:not-a-real-secret-0123456789",
    } | (env or {})
    env = {k: v for k, v in os.environ.items() if k != "CLICKHOUSE_URL"} | settings
    with pytest.MonkeyPatch.context() as patch, ExitStack() as stops:
        for name, value in settings.items():
            patch.setenv(name, value)
        patch.delenv("CLICKHOUSE_URL", raising=False)
        apply_topology(bootstrap=bootstrap)
        processes: list[ServiceProcess] = []

        def start(name: str, service: str, *args: str) -> ServiceProcess:
            process = ServiceProcess(name, home / f"{name}.log", env, service, args)
            process.start()
            stops.callback(process.stop)
            processes.append(process)
            return process

        history = start("history", "history")
        wait_for(lambda: read_owner(home / "history") is not None, 90, "the history owner",
                 history)  # fmt: skip
        if runs:
            start("timer", "timer")
            start("worker", "worker", "--concurrency", "2")
            start("orchestrator", "orchestrator")
            start("watchdog", "watchdog")
        api = start("api", "api")
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{base}/healthz"), 60, "the API answering", api)
        yield ConsoleStack(base, JobsClient(bootstrap), processes)
