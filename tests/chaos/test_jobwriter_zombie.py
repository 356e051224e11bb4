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
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.chaos.jobwriter_patchers import Patchers, verdicts_of, written_exactly_the_accepted
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.sdk.job_commands import JobCommandWriter
from tickwheel.stack.broker import free_port
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(600)]

JOBS = [f"zombie-{n}" for n in range(12)]  # over all six partitions
# Enough writers that the judge nearly always has a batch to commit, so that a stop often
# lands inside a transaction: with 3, a clean-clone CI on a loaded machine went 12 stops
# without one (the judge mostly waited for the next command).
WRITERS = 8
SESSION_TIMEOUT_S = 10  # the judge's session.timeout.ms
STOP_TRIES = 30  # stops that find no open transaction of the judge's, before giving up
PINNED_WATCH_S = 1.5  # how long the last stable offset must stay put (well inside the session)


class Judge:
    def __init__(self, instance: str, log: Path) -> None:
        self.instance = instance
        self.port = free_port()
        self.log = log
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


def _verdict_ends(committed: Consumer, uncommitted: Consumer) -> tuple[int, int]:
    """`jobs.verdicts`' (one partition) last stable offset and its high watermark: a
    read_committed consumer's end is the first offset of the oldest open transaction."""
    verdicts = TopicPartition(topic_name("jobs.verdicts"), 0)
    stable = committed.get_watermark_offsets(verdicts, timeout=5, cached=False)[1]
    return stable, uncommitted.get_watermark_offsets(verdicts, timeout=5, cached=False)[1]


def stop_inside_a_transaction(judge: Judge, bootstrap: str, answered: dict[str, str]) -> int:
    """SIGSTOP `judge` while a transaction of its own with verdicts in the log is open; the
    time of that stop (epoch ms). The sign: over `PINNED_WATCH_S` of the stop the last stable
    offset stays put below the end (the other judge's commits move the end on; a transaction
    of its would end within the watch). A stop that shows no such transaction is lifted, and
    the next one comes after more verdicts."""
    committed = Consumer(consumer_config(f"zombie-watch-{time.time_ns()}", bootstrap))
    uncommitted = Consumer(consumer_config(f"zombie-watch-{time.time_ns()}", bootstrap,
                                           **{"isolation.level": "read_uncommitted"}))  # fmt: skip
    try:
        for tries in range(1, STOP_TRIES + 1):
            judge.process.send_signal(signal.SIGSTOP)
            stopped_at_ms = int(time.time() * 1000)
            first_stable, _end = _verdict_ends(committed, uncommitted)
            time.sleep(PINNED_WATCH_S)
            stable, end = _verdict_ends(committed, uncommitted)
            if stable == first_stable < end:
                print(f"the judge stopped inside a transaction at stop {tries}")
                return stopped_at_ms
            judge.process.send_signal(signal.SIGCONT)
            more = len(answered) + 5
            wait_for(lambda: len(answered) >= more, 60, "no verdicts after a short stop")  # noqa: B023
        raise AssertionError(f"no stop in {STOP_TRIES} found the judge inside a transaction")
    finally:
        committed.close()
        uncommitted.close()


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


def test_a_stopped_judge_lands_nothing_after_its_partitions_moved(
    judges: tuple[Judge, Judge], kafka_bootstrap: str
) -> None:
    stopped, heir = judges
    writer = JobCommandWriter(kafka_bootstrap, wait_s=60)
    patchers = Patchers(writer, JOBS, WRITERS, rounds=100_000)
    answered, failures = patchers.answered, patchers.failures
    try:
        patchers.create_all()
        patchers.start()
        wait_for(lambda: len(answered) >= 30, 120, "no verdicts before the stop")
        stopped_at_ms = stop_inside_a_transaction(stopped, kafka_bootstrap, answered)
        wait_for(lambda: heir.partitions() == 6, SESSION_TIMEOUT_S + 60,
                 "the other judge never took the stopped one's partitions")  # fmt: skip
        handed_over_ms = int(time.time() * 1000)
        seen = len(answered)
        wait_for(lambda: len(answered) >= seen + 30, 120, "no verdicts after the handover")
        stopped.process.send_signal(signal.SIGCONT)  # it wakes with what it had in hand
        wait_for(lambda: stopped.partitions() > 0, 120, "the woken judge never rejoined")
        seen = len(answered)
        wait_for(lambda: len(answered) >= seen + 30, 120, "no verdicts after the wake")
        # The transaction it woke inside was refused (its offsets carry the old generation,
        # or the broker had aborted it at its timeout), so the wake exercised the fence.
        assert "poll_transaction_failed" in stopped.log.read_text(), (
            "the stale commit was not refused"
        )
        patchers.stop()
        assert not failures, failures
    finally:
        patchers.stop()
        writer.close()

    # Every command sent gets its verdict (bounded wait).
    order, verdicts = verdicts_of(kafka_bootstrap, patchers.sent)
    assert all(len(v) == 1 for v in verdicts.values()), "a command judged twice"
    for command_id, outcome in answered.items():
        assert verdicts[command_id][0]["outcome"] == outcome

    # Commit order: nothing judged before the stop commits after a verdict judged once the
    # heir held every partition (the stopped judge's open transaction, had it landed late).
    after = [i for i, v in enumerate(order) if v["judged_at"] >= handed_over_ms]
    before = [i for i, v in enumerate(order) if v["judged_at"] < stopped_at_ms]
    assert after and before
    assert max(before) < min(after), "a verdict of the stopped judge landed after the handover"

    written_exactly_the_accepted(kafka_bootstrap, JOBS, verdicts)
