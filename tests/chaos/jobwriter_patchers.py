"""What the judge's fault tests share: writers patching jobs at the version they last saw
(so some commands conflict) on threads while the test harms the judge, and reading back
every sent command's verdicts once they are all answered (`test_jobwriter_chaos.py`,
`test_jobwriter_zombie.py`)."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from typing import Any

from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.job_commands import JobCommandWriter, VerdictPending
from tickwheel.sdk.jobs import validate_job
from tickwheel.topology import topic_name


def definition(job_id: str, version: int, label: str) -> dict[str, Any]:
    spec = {"jobId": job_id, "type": "noop", "cron": "0 3 * * *", "labels": {"by": label}}
    return validate_job(spec, int(time.time() * 1000), version)


class Patchers:
    """`writers` threads, each updating a random job of `jobs` at the version it last saw,
    until `stop` (at most `rounds` commands each). `sent`: every command the broker
    acknowledged; `answered`: the verdict each writer was told, by command id."""

    def __init__(self, writer: JobCommandWriter, jobs: list[str], writers: int, rounds: int):
        self.writer, self.jobs, self.rounds = writer, jobs, rounds
        self.sent: list[str] = []
        self.answered: dict[str, str] = {}
        self.failures: list[BaseException] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(w,)) for w in range(writers)]

    def create_all(self) -> None:
        for job_id in self.jobs:
            assert self.writer.submit(
                "create", job_id, definition(job_id, 1, "create")
            ).outcome == ("created")

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._halt.set()
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(120)

    def _write(self, who: int) -> None:
        rng = random.Random(who)
        known = dict.fromkeys(self.jobs, 1)
        try:
            for n in range(self.rounds):  # bounded; ends when told
                if self._halt.is_set():
                    return
                job_id = rng.choice(self.jobs)
                record = definition(job_id, known[job_id] + 1, f"{who}-{n}")
                try:
                    verdict = self.writer.submit("update", job_id, record, known[job_id])
                except VerdictPending as late:  # its judge is down or stopped
                    with self._lock:
                        self.sent.append(late.command_id)
                    continue
                with self._lock:
                    self.sent.append(verdict.command_id)
                    self.answered[verdict.command_id] = verdict.outcome
                known[job_id] = verdict.current_version or known[job_id]
        except BaseException as exc:  # reported by the test
            self.failures.append(exc)


def verdicts_of(
    bootstrap: str, sent: list[str], within_s: float = 180
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Every verdict on `jobs.verdicts` in commit order, and by command id, once every command
    of `sent` has one (bounded: an assertion past `within_s`)."""
    deadline = time.monotonic() + within_s
    while True:
        order = [
            decode(record.value or b"", "JobVerdict")[1]
            for record in read_to_end(topic_name("jobs.verdicts"), None, bootstrap)
        ]
        verdicts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for value in order:
            verdicts[value["command_id"]].append(value)
        missing = [c for c in sent if c not in verdicts]
        if not missing:
            return order, verdicts
        assert time.monotonic() < deadline, f"{len(missing)} of {len(sent)} never answered"
        time.sleep(1)


def written_exactly_the_accepted(
    bootstrap: str, jobs: list[str], verdicts: dict[str, list[dict[str, Any]]]
) -> int:
    """Each job's versions on `jobs.definitions` are 1, 2, 3, ... (no gap, no repeat) and are
    exactly those its accepted verdicts name (none lost, none extra); returns the updates."""
    written: dict[str, list[int]] = defaultdict(list)
    for record in read_to_end(topic_name("jobs.definitions"), None, bootstrap):
        if record.key in jobs and record.value is not None:
            written[record.key].append(decode(record.value, "JobDefinition")[1]["version"])
    accepted: dict[str, list[int]] = defaultdict(list)
    for (value,) in verdicts.values():
        if value["outcome"] in ("created", "updated"):
            accepted[value["job_id"]].append(value["current_version"])
    for job_id in jobs:
        assert written[job_id] == list(range(1, len(written[job_id]) + 1)), job_id
        assert sorted(accepted[job_id]) == written[job_id], job_id  # none lost, none extra
    return sum(len(written[job_id]) - 1 for job_id in jobs)
