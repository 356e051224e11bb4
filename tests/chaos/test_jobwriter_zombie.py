"""A judge stopped (SIGSTOP) past its session timeout while commands flow, its partitions
taken over by another judge, then woken (SIGCONT): decision 0178's fencing, one producer per
judge and the group's generation on the offsets (KIP-447), where no new owner fences the old
one's transactional id any more.

Read back from the topics (read_committed) once every command sent is answered: every
acknowledged command has exactly one verdict; each job's versions are 1, 2, 3, ... with no
gap and no repeat, and exactly the accepted ones are written; and nothing the stopped judge
had judged landed after the handover: on `jobs.verdicts` (one partition, in commit order) no
verdict judged before the stop lies after one judged once the other judge held every
partition. A transaction the stopped judge had open either committed before the new owner
read the partition (its restore waits for it) or not at all (its offsets are refused)."""

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

import httpx
import pytest

from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.job_commands import JobCommandWriter, VerdictPending
from tickwheel.sdk.jobs import validate_job
from tickwheel.stack.broker import free_port
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(600)]

JOBS = [f"zombie-{n}" for n in range(12)]  # over all six partitions
WRITERS = 3
SESSION_TIMEOUT_S = 10  # the judge's session.timeout.ms


class Judge:
    def __init__(self, instance: str, log: Path) -> None:
        self.instance = instance
        self.port = free_port()
        out = log.open("ab")
        env = {**os.environ, "TICKWHEEL_METRICS_PORT": str(self.port)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tickwheel.services.jobwriter", "--instance", instance],
            env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip

    def partitions(self) -> int:
        """Partitions restored and judged here (its /metrics), -1 while it does not answer."""
        try:
            text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text
        except httpx.TransportError:
            return -1
        rows = [r for r in text.splitlines() if r.startswith("tickwheel_jobwriter_partitions ")]
        return int(float(rows[0].split()[1])) if rows else -1

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


def wait_for(condition: Any, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.fixture
def judges(applied_topology: str, tmp_path: Path) -> Iterator[tuple[Judge, Judge]]:
    first, second = Judge("a", tmp_path / "a.log"), Judge("b", tmp_path / "b.log")
    try:
        wait_for(lambda: first.partitions() > 0 and second.partitions() > 0
                 and first.partitions() + second.partitions() == 6, 120,
                 "the two judges never shared the six partitions")  # fmt: skip
        yield first, second
    finally:
        first.stop()
        second.stop()


def definition(job_id: str, version: int, label: str) -> dict[str, Any]:
    spec = {"jobId": job_id, "type": "noop", "cron": "0 3 * * *", "labels": {"by": label}}
    return validate_job(spec, int(time.time() * 1000), version)


def test_a_stopped_judge_lands_nothing_after_its_partitions_moved(
    judges: tuple[Judge, Judge], kafka_bootstrap: str
) -> None:
    stopped, heir = judges
    writer = JobCommandWriter(kafka_bootstrap, wait_s=60)
    sent: list[str] = []
    answered: dict[str, str] = {}
    lock = threading.Lock()
    halt = threading.Event()
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
                for n in range(100_000):  # bounded; ends when told
                    if halt.is_set():
                        return
                    job_id = rng.choice(JOBS)
                    record = definition(job_id, known[job_id] + 1, f"{who}-{n}")
                    try:
                        verdict = writer.submit("update", job_id, record, known[job_id])
                    except VerdictPending as late:  # its partition's judge is stopped
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
        wait_for(lambda: len(answered) >= 30, 120, "no verdicts before the stop")
        time.sleep(random.Random(7).uniform(0, 0.3))  # wherever the judge has got to
        stopped.process.send_signal(signal.SIGSTOP)
        stopped_at_ms = int(time.time() * 1000)
        wait_for(lambda: heir.partitions() == 6, SESSION_TIMEOUT_S + 60,
                 "the other judge never took the stopped one's partitions")  # fmt: skip
        handed_over_ms = int(time.time() * 1000)
        seen = len(answered)
        wait_for(lambda: len(answered) >= seen + 30, 120, "no verdicts after the handover")
        stopped.process.send_signal(signal.SIGCONT)  # it wakes with what it had in hand
        wait_for(lambda: stopped.partitions() > 0, 120, "the woken judge never rejoined")
        seen = len(answered)
        wait_for(lambda: len(answered) >= seen + 30, 120, "no verdicts after the wake")
        halt.set()
        for thread in threads:
            thread.join(120)
        assert not failures, failures
    finally:
        halt.set()
        writer.close()

    deadline = time.monotonic() + 180
    while True:  # every command sent gets its verdict (bounded wait)
        order: list[dict[str, Any]] = []
        for record in read_to_end(topic_name("jobs.verdicts"), None, kafka_bootstrap):
            order.append(decode(record.value or b"", "JobVerdict")[1])
        verdicts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for value in order:
            verdicts[value["command_id"]].append(value)
        missing = [c for c in sent if c not in verdicts]
        if not missing:
            break
        assert time.monotonic() < deadline, f"{len(missing)} of {len(sent)} never answered"
        time.sleep(1)
    assert all(len(v) == 1 for v in verdicts.values()), "a command judged twice"
    for command_id, outcome in answered.items():
        assert verdicts[command_id][0]["outcome"] == outcome

    # Commit order: nothing judged before the stop commits after a verdict judged once the
    # heir held every partition (the stopped judge's open transaction, had it landed late).
    after = [i for i, v in enumerate(order) if v["judged_at"] >= handed_over_ms]
    before = [i for i, v in enumerate(order) if v["judged_at"] < stopped_at_ms]
    assert after and before
    assert max(before) < min(after), "a verdict of the stopped judge landed after the handover"

    written: dict[str, list[int]] = defaultdict(list)
    for record in read_to_end(topic_name("jobs.definitions"), None, kafka_bootstrap):
        if record.key in JOBS and record.value is not None:
            written[record.key].append(decode(record.value, "JobDefinition")[1]["version"])
    accepted: dict[str, list[int]] = defaultdict(list)
    for (value,) in verdicts.values():
        if value["outcome"] in ("created", "updated"):
            accepted[value["job_id"]].append(value["current_version"])
    for job_id in JOBS:
        assert written[job_id] == list(range(1, len(written[job_id]) + 1)), job_id
        assert sorted(accepted[job_id]) == written[job_id], job_id  # none lost, none extra
