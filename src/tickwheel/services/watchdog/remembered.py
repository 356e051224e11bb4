"""Last successes the watchdog keeps on `watchdog.state`, so that a restart, which replays the
inputs from their earliest offsets (decision 0056), does not lose the last success of a job
whose success event the executions topics' retention has already dropped (decision 0189).

Only jobs expected to run at most about daily are kept: a job expected more often whose last
success is older than the retention (7 days) is overdue by days, and its incident, restored
from `watchdog.state`, stays open. One record per job (compacted by key), written in the
tick's transaction; restored with the same max-fold as a `succeeded` event, so a snapshot and
a replay of the events it stands for give the same facts in any order."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from tickwheel.core.watchdog import plain_alert
from tickwheel.core.watchdog.jobs import effective_interval
from tickwheel.core.watchdog.table import JobFacts
from tickwheel.records import Alert

SUCCESS_PREFIX = "success/"
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
