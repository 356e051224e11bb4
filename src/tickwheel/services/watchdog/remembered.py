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


def parse_versions(record: Alert) -> tuple[str, Versions] | None:
    """The job and versions a `watchdog.state` record keeps, or None for another kind."""
    alert_id = record["alert_id"]
    if not alert_id.startswith(VERSIONS_PREFIX):
        return None
    kept = json.loads(record["details"] or "{}")["versions"]
    versions = {int(v): (bool(enabled), int(updated)) for v, (enabled, updated) in kept.items()}
    return alert_id[len(VERSIONS_PREFIX) :], versions


def versions_to_remember(table: JobTable, redefined: set[str]) -> Iterator[tuple[str, Versions]]:
    """Of the jobs a definition was folded for since the last transaction, the versions to
    keep: those of jobs with a disabled version among the versions held."""
    for job_id in sorted(redefined):
        versions = table.history.get(job_id)
        if versions and not all(enabled for enabled, _ in versions.values()):
            yield job_id, dict(versions)


def forgotten_keys(jobs: Mapping[str, JobFacts], redefined: set[str]) -> Iterator[str]:
    """The `watchdog.state` keys to tombstone: those of the jobs deleted since the last
    transaction (and not created again)."""
    for job_id in sorted(redefined):
        job = jobs.get(job_id)
        if job is not None and job.deleted and job.spec is None:
            yield SUCCESS_PREFIX + job_id
            yield VERSIONS_PREFIX + job_id
