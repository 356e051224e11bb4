"""Conditions about one job's runs and its disable, beside overdue and broken chain:

* `run_too_long` — an attempt still running past the job's `maxRunTime` (plus a grace: the
  worker cancels it at `maxRunTime`, so one still running later means a worker that hung or
  events that were lost);
* `run_too_short` — the job's newest run whose length is known succeeded in less than its
  `minRunTime` (a job that "succeeds" in no time often did nothing); clears when a later run
  takes long enough;
* `disabled_past_review` — a disabled job still disabled after its `disabledReviewBy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.facts import JobFacts
from tickwheel.core.watchdog.jobs import JobProfile
from tickwheel.core.watchdog.table import JobTable
from tickwheel.core.watchdog.thresholds import Thresholds

RUN_KINDS = ("run_too_long", "run_too_short", "disabled_past_review")


def all_run_conditions(
    jobs: JobTable, order: Iterable[str], watermark: int, thresholds: Thresholds
) -> Iterator[Condition]:
    """`run_conditions` of every job in `order`, a view made only for a job whose profile
    can raise one at `watermark` (decided once per profile, decision 0093)."""
    rows, profile_of, deleted, _, _, profiles = jobs.columns()
    relevant: dict[int, bool] = {}
    for job_id in order:
        row = rows[job_id]
        number = profile_of[row]
        if number < 0 or deleted[row]:
            continue
        may = relevant.get(number)
        if may is None:
            profile = profiles[number]
            assert profile is not None
            may = relevant[number] = _may_raise(profile, watermark)
        if may:
            yield from run_conditions(job_id, JobFacts(jobs, job_id, row), watermark, thresholds)


def _may_raise(profile: JobProfile, watermark: int) -> bool:
    """False when `run_conditions` yields nothing for any job of `profile` at `watermark`."""
    if not profile.enabled:
        return profile.review_by_ms is not None and watermark >= profile.review_by_ms
    return profile.max_run_ms is not None or profile.min_run_ms is not None


def run_conditions(
    job_id: str, job: JobFacts, watermark: int, thresholds: Thresholds
) -> Iterator[Condition]:
    spec = job.spec
    if spec is None or job.deleted:
        return
    if not spec.enabled:
        yield from _disabled(job_id, job, watermark)
        return
    if spec.max_run_ms is not None:
        limit = spec.max_run_ms + thresholds.run_grace_ms
        running = [
            (facts.leased_at, slot, facts)
            for slot, facts in job.slots.items()
            if facts.stage == 2
            and facts.leased_at is not None
            and watermark - facts.leased_at > limit
        ]
        if running:
            leased_at, slot, facts = min(running, key=lambda r: (r[0], r[1]))
            took = watermark - leased_at
            yield Condition(
                "run_too_long",
                job_id,
                "warning",
                f"job {job_id} has been running for {took // 1000} s, longer than its "
                f"maxRunTime of {spec.max_run_ms // 1000} s",
                {
                    "slot": slot,
                    "attempt": facts.attempt,
                    "worker": facts.worker,
                    "leased_at": leased_at,
                    "running_ms": took,
                    "max_run_ms": spec.max_run_ms,
                    "running_attempts": len(running),
                },
                summary=f"{slot}:{facts.attempt}",
                job_id=job_id,
                tenant_id=spec.tenant_id,
            )
    if spec.min_run_ms is not None and job.last_run is not None:
        slot, attempt, leased_at, succeeded_at = job.last_run
        took = succeeded_at - leased_at
        if took < spec.min_run_ms:
            yield Condition(
                "run_too_short",
                job_id,
                "warning",
                f"job {job_id}'s latest run succeeded in {took} ms, less than its minRunTime "
                f"of {spec.min_run_ms} ms",
                {
                    "slot": slot,
                    "attempt": attempt,
                    "leased_at": leased_at,
                    "succeeded_at": succeeded_at,
                    "run_ms": took,
                    "min_run_ms": spec.min_run_ms,
                },
                summary="short",
                job_id=job_id,
                tenant_id=spec.tenant_id,
            )


def _disabled(job_id: str, job: JobFacts, watermark: int) -> Iterator[Condition]:
    spec = job.spec
    assert spec is not None
    if spec.review_by_ms is None or watermark < spec.review_by_ms:
        return
    evidence: dict[str, Any] = disabled_report(job) or {}
    yield Condition(
        "disabled_past_review",
        job_id,
        "warning",
        f"job {job_id} is still disabled past its review date"
        f" (owner {spec.disabled_owner or 'unknown'}: {spec.disabled_reason or 'no reason given'})",
        {**evidence, "overdue_by_ms": watermark - spec.review_by_ms},
        summary="disabled",
        job_id=job_id,
        tenant_id=spec.tenant_id,
    )


def disabled_report(job: JobFacts) -> dict[str, Any] | None:
    """What `tickwheel jobs disabled` shows of one disabled job, None for an enabled one."""
    spec = job.spec
    since = job.disabled_since_ms()
    if spec is None or job.deleted or since is None:
        return None
    return {
        "job_id": spec.job_id,
        "tenant_id": spec.tenant_id,
        "owner": spec.disabled_owner,
        "reason": spec.disabled_reason,
        "by": spec.disabled_by,
        "since": since,
        "review_by": spec.review_by_ms,
        "version": spec.version,
    }
