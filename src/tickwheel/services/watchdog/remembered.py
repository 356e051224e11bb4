"""Facts the watchdog keeps on `watchdog.state`, so that a restart, which replays the inputs
from their earliest offsets (decision 0056), does not lose what their retention or compaction
has dropped: the last success of a job whose success event has aged out of the executions
topics (decision 0189), and the definition versions of a job paused and resumed, which
compaction of `jobs.definitions` folds into the newest (decision 0190).

Only jobs expected to run at most about daily are kept: a job expected more often whose last
success is older than the retention (7 days) is overdue by days, and its incident, restored
from `watchdog.state`, stays open. One record per job (compacted by key), written in the
tick's transaction; restored with the same max-fold as a `succeeded` event, so a snapshot and
a replay of the events it stands for give the same facts in any order.

A job's versions are kept once one of them is disabled: they alone say when it was resumed
(the interval restarts there) and since when it is paused. A deleted job's records get
tombstones in the transaction that folds the delete."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from tickwheel.core.watchdog import plain_alert
from tickwheel.core.watchdog.jobs import effective_interval
from tickwheel.core.watchdog.table import JobFacts, JobTable
from tickwheel.records import Alert

SUCCESS_PREFIX = "success/"
VERSIONS_PREFIX = "versions/"
DAY_MS = 86_400_000
# A job expected at least this far apart has every success kept. Well under the executions
# topics' retention (7 days, topology/topics.toml): a test holds it under half of it.
REMEMBERED_MIN_INTERVAL_MS = DAY_MS


class RememberedSuccess(NamedTuple):
    job_id: str
    at: int  # the succeeded event's time (epoch ms)
    slot: int  # the occurrence that succeeded


def success_record(success: RememberedSuccess) -> Alert:
    return plain_alert(
        SUCCESS_PREFIX + success.job_id,
        success.at,
        "watchdog_last_success",
        "info",
        "a job's last success, kept past the retention of its events",
        job_id=success.job_id,
        details=json.dumps({"last_success": {"at": success.at, "slot": success.slot}}),
    )


def parse_success(record: Alert) -> RememberedSuccess | None:
    """The success a `watchdog.state` record keeps, or None for another kind of record."""
    alert_id = record["alert_id"]
    if not alert_id.startswith(SUCCESS_PREFIX):
        return None
    kept = json.loads(record["details"] or "{}")["last_success"]
    return RememberedSuccess(alert_id[len(SUCCESS_PREFIX) :], int(kept["at"]), int(kept["slot"]))


def to_remember(
    jobs: Mapping[str, JobFacts], succeeded: set[str], grace_ms: int
) -> Iterator[RememberedSuccess]:
    """Of the jobs a success was folded for since the last transaction, the last successes
    to keep: those of recurring jobs expected at least `REMEMBERED_MIN_INTERVAL_MS` apart."""
    for job_id in sorted(succeeded):
        job = jobs.get(job_id)
        if job is None:
            continue
        at, slot, spec = job.last_success_ms, job.last_success_slot, job.spec
        if at is None or slot is None or spec is None or job.deleted:
            continue
        interval = effective_interval(spec, grace_ms)
        if interval is not None and interval.ms >= REMEMBERED_MIN_INTERVAL_MS:
            yield RememberedSuccess(job_id, at, slot)


# version → (enabled, updatedAt), as `JobTable.history` holds them
Versions = dict[int, tuple[bool, int]]


def versions_record(job_id: str, versions: Mapping[int, tuple[bool, int]], now_ms: int) -> Alert:
    kept = {str(v): [enabled, updated] for v, (enabled, updated) in sorted(versions.items())}
    return plain_alert(
        VERSIONS_PREFIX + job_id,
        now_ms,
        "watchdog_job_versions",
        "info",
        "a paused job's definition versions, kept past the compaction of its definitions",
        job_id=job_id,
        details=json.dumps({"versions": kept}),
    )


class RememberedVersions(NamedTuple):
    job_id: str
    versions: Versions


def parse_versions(record: Alert) -> RememberedVersions | None:
    """The job and versions a `watchdog.state` record keeps, or None for another kind."""
    alert_id = record["alert_id"]
    if not alert_id.startswith(VERSIONS_PREFIX):
        return None
    kept = json.loads(record["details"] or "{}")["versions"]
    versions = {int(v): (bool(enabled), int(updated)) for v, (enabled, updated) in kept.items()}
    return RememberedVersions(alert_id[len(VERSIONS_PREFIX) :], versions)


def held_versions(table: JobTable, job_id: str) -> Versions | None:
    """The versions to keep for a job: those held, if one of them is disabled."""
    versions = table.history.get(job_id)
    if versions and not all(enabled for enabled, _ in versions.values()):
        return dict(versions)
    return None


class KeptFacts:
    """Which jobs' kept facts each transaction writes or tombstones on `watchdog.state`.

    - A success folded for a job expected a day or more apart: its `success/` record (0189).
    - A definition folded: the job's `versions/` record while a disabled version is held, a
      tombstone once none is (deleted, re-created, or every held version enabled again: a
      stale record would be merged into the job's versions on the next restore, 0190).
    - A delete: its `success/` tombstone, once the watchdog has replayed past where the last
      owner stood. A replay folds an old delete before the re-create that follows it, and
      a tombstone written between the two would drop the live job's success for good.
    """

    def __init__(self) -> None:
        self.succeeded: set[str] = set()  # since the last transaction
        self.redefined: set[str] = set()  # since the last transaction
        self.deleted: set[str] = set()  # awaiting their tombstones
        self.versions_on_topic: set[str] = set()  # jobs with a `versions/` record

    def writes(
        self, jobs: JobTable, grace_ms: int, now_ms: int, caught_up: bool
    ) -> list[tuple[str, Alert | None]]:
        """(key, record or None for a tombstone) for this transaction, in key order per kind."""
        out: list[tuple[str, Alert | None]] = []
        for success in to_remember(jobs, self.succeeded, grace_ms):
            out.append((SUCCESS_PREFIX + success.job_id, success_record(success)))
        for job_id in sorted(self.redefined):
            versions = held_versions(jobs, job_id)
            if versions is not None:
                out.append((VERSIONS_PREFIX + job_id, versions_record(job_id, versions, now_ms)))
                self.versions_on_topic.add(job_id)
            elif job_id in self.versions_on_topic:
                out.append((VERSIONS_PREFIX + job_id, None))
                self.versions_on_topic.discard(job_id)
            job = jobs.get(job_id)
            if job is not None and job.deleted and job.spec is None:
                self.deleted.add(job_id)
        if caught_up:
            for job_id in sorted(self.deleted):
                job = jobs.get(job_id)
                if job is not None and job.deleted and job.spec is None:
                    out.append((SUCCESS_PREFIX + job_id, None))
            self.deleted.clear()
        return out

    def committed(self) -> None:
        self.succeeded.clear()
        self.redefined.clear()
