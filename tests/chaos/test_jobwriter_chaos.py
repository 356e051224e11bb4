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
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.job_commands import JobCommandWriter, VerdictPending
from tickwheel.sdk.job_write_path import judge_running
from tickwheel.sdk.jobs import validate_job
from tickwheel.topology import topic_name

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


def definition(job_id: str, version: int, label: str) -> dict[str, Any]:
    spec = {"jobId": job_id, "type": "noop", "cron": "0 3 * * *", "labels": {"by": label}}
    return validate_job(spec, int(time.time() * 1000), version)


def test_every_acknowledged_command_has_one_verdict_and_versions_never_gap_or_repeat(
    judge: JudgeProcess, kafka_bootstrap: str
) -> None:
    writer = JobCommandWriter(kafka_bootstrap, wait_s=60)
    sent: list[str] = []  # acknowledged by the broker (deliver returned)
    answered: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[BaseException] = []
    try:
        for job_id in JOBS:
            assert writer.submit("create", job_id, definition(job_id, 1, "create")).outcome == (
                "created"
            )

        def write(who: int) -> None:
            rng = random.Random(who)
            known = dict.fromkeys(JOBS, 1)
            try:
                for n in range(10_000):  # bounded; ends when told
                    if stop.is_set():
                        return
                    job_id = rng.choice(JOBS)
                    record = definition(job_id, known[job_id] + 1, f"{who}-{n}")
                    try:
                        verdict = writer.submit("update", job_id, record, known[job_id])
                    except VerdictPending as late:
                        with lock:
                            sent.append(late.command_id)
                        continue
                    with lock:
                        sent.append(verdict.command_id)
                        answered[verdict.command_id] = verdict.outcome
                    known[job_id] = verdict.current_version or known[job_id]
            except BaseException as exc:  # reported by the test
                failures.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for thread in threads:
            thread.start()
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
        stop.set()
        for thread in threads:
            thread.join(120)
        assert not failures, failures
    finally:
        stop.set()
        writer.close()

    # Every command sent gets its verdict once the judge runs (bounded wait).
    deadline = time.monotonic() + 180
    while True:
        verdicts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in read_to_end(topic_name("jobs.verdicts"), None, kafka_bootstrap):
            value = decode(record.value or b"", "JobVerdict")[1]
            verdicts[value["command_id"]].append(value)
        missing = [c for c in sent if c not in verdicts]
        if not missing:
            break
        assert time.monotonic() < deadline, f"{len(missing)} of {len(sent)} never answered"
        time.sleep(1)
    assert len(answered) >= (KILLS + 1) * VERDICTS_BETWEEN_KILLS
    assert all(len(v) == 1 for v in verdicts.values()), "a command judged twice"
    for command_id, outcome in answered.items():
        assert verdicts[command_id][0]["outcome"] == outcome  # what the writer was told

    written: dict[str, list[int]] = defaultdict(list)
    for record in read_to_end(topic_name("jobs.definitions"), None, kafka_bootstrap):
        if record.key in JOBS and record.value is not None:
            written[record.key].append(decode(record.value, "JobDefinition")[1]["version"])
    accepted: dict[str, list[int]] = defaultdict(list)
    for (value,) in verdicts.values():
        if value["outcome"] in ("created", "updated"):
            accepted[value["job_id"]].append(value["current_version"])
    updates = 0
    for job_id in JOBS:
        assert written[job_id] == list(range(1, len(written[job_id]) + 1)), job_id
        assert sorted(accepted[job_id]) == written[job_id], job_id  # none lost, none extra
        updates += len(written[job_id]) - 1
    assert updates > 0
