"""The single writer SIGKILLed again and again while commands flow (decisions 0099, 0126).

Three writers keep updating four jobs at the version they last saw (so some commands
conflict), while the judge process is killed and started again. Read back from the topics
(read_committed) once every command sent is answered: every acknowledged command has exactly
one verdict; each job's versions on jobs.definitions are 1, 2, 3, ... with no gap and no
repeat; every accepted update's version is on jobs.definitions (no accepted write lost) and
nothing else is (no refused one written)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.jobwriter_patchers import Patchers, verdicts_of, written_exactly_the_accepted
from tickwheel.sdk.job_commands import JobCommandWriter
from tickwheel.sdk.job_write_path import judge_running

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(900)]

JOBS = [f"chaos-{n}" for n in range(4)]
WRITERS = 3
KILLS = 4
VERDICTS_BETWEEN_KILLS = 10


class JudgeProcess:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tickwheel.services.jobwriter", "--instance", "chaos"],
            env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT)  # fmt: skip

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@pytest.fixture
def judge(applied_topology: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[JudgeProcess]:
    running = JudgeProcess(tmp_path / "jobwriter.log")
    running.start()
    deadline = time.monotonic() + 90
    while not judge_running(kafka_bootstrap):
        assert time.monotonic() < deadline, running.log.read_text()
        time.sleep(0.5)
    yield running
    running.stop()


def test_every_acknowledged_command_has_one_verdict_and_versions_never_gap_or_repeat(
    judge: JudgeProcess, kafka_bootstrap: str
) -> None:
    writer = JobCommandWriter(kafka_bootstrap, wait_s=60)
    patchers = Patchers(writer, JOBS, WRITERS, rounds=10_000)
    answered, failures = patchers.answered, patchers.failures
    try:
        patchers.create_all()
        patchers.start()
        for kill in range(KILLS + 1):
            # Each judge answers some commands before it is killed, mid-flow: the kills land
            # between transactions or inside one, wherever the writers have got to.
            seen = len(answered)
            deadline = time.monotonic() + 120
            while len(answered) < seen + VERDICTS_BETWEEN_KILLS:
                assert time.monotonic() < deadline, f"no verdicts after restart {kill}"
                assert not failures, failures
                time.sleep(0.05)
            time.sleep(random.Random(kill).uniform(0, 0.5))
            if kill < KILLS:
                judge.kill()
                judge.start()
        patchers.stop()
        assert not failures, failures
    finally:
        patchers.stop()
        writer.close()

    # Every command sent gets its verdict once the judge runs (bounded wait).
    _order, verdicts = verdicts_of(kafka_bootstrap, patchers.sent)
    assert len(answered) >= (KILLS + 1) * VERDICTS_BETWEEN_KILLS
    assert all(len(v) == 1 for v in verdicts.values()), "a command judged twice"
    for command_id, outcome in answered.items():
        assert verdicts[command_id][0]["outcome"] == outcome  # what the writer was told

    updates = written_exactly_the_accepted(kafka_bootstrap, JOBS, verdicts)
    assert updates > 0
