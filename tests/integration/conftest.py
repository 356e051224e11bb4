"""Fixtures the integration tests share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def worker(
    applied_topology: str, kafka_bootstrap: str, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`worker(*args)`: a real worker process with `args`, logging under `tmp_path`; every one
    still running is stopped on the way out, and none may have logged a traceback."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker-{len(processes)}.log").open("ab")
        instance = f"w{len(processes)}"
        env = {
            **os.environ,
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "TICKWHEEL_TOPIC_PREFIX": applied_topology,
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "tickwheel.services.worker", "--instance", instance, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
    for log in sorted(tmp_path.glob("worker-*.log")):
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
