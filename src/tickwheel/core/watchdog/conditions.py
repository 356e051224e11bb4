"""Which alert conditions hold at a watermark, each with the evidence a person acts on.

A condition is a fact about the inputs up to the watermark, nothing more: whether it opens,
updates or resolves an incident is `lifecycle`'s business.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tickwheel.core.jitter import jitter_offset_ms
from tickwheel.core.schedule import CompiledSchedule
from tickwheel.core.watchdog.deadlines import Deadlines
from tickwheel.core.watchdog.facts import Facts, JobFacts, SlotFacts
from tickwheel.core.watchdog.jobs import JobProfile, effective_interval
from tickwheel.core.watchdog.table import JobTable
from tickwheel.core.watchdog.thresholds import Thresholds
from tickwheel.errors import TickwheelError
from tickwheel.records import AlertSeverity

KINDS = (
    "job_overdue",
    "broken_chain",
    "run_too_long",
    "run_too_short",
    "disabled_past_review",
    "dead_letter_age",
    "oldest_ready_age",
    "timer_partition_stalled",
    "no_live_worker",
    "watchdog_lagging",
    "output_stale",
    "freshness_query_failed",
    "missed_slots",
    "workflow_step_stuck",
)
# Owed slots listed in an overdue alert's evidence (the newest ones; the count is complete).
SLOTS_SHOWN = 10


@dataclass(frozen=True, slots=True)
class Condition:
    kind: str
    subject: str
    severity: AlertSeverity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # What a material change looks like: an incident is updated only when this changes.
    summary: str = ""
    job_id: str | None = None
    tenant_id: str | None = None
    # What the newest owed slot's diagnosis is (overdue), for the parents to group by.
    cause: str = ""
    # The fingerprint of the parent condition that explains this one (`parents`), if any.
    suppressed_by: str | None = None


def conditions(
    facts: Facts, watermark: int, thresholds: Thresholds, order: Iterable[str] | None = None
) -> Iterator[Condition]:
    """Every condition true at `watermark`, in a deterministic order. `order`: the job ids
    sorted, if the caller has them already."""
    yield from job_conditions(facts.jobs, watermark, thresholds, order)
    yield from _dead_letter_ages(facts, watermark, thresholds)
    yield from _ready_ages(facts, watermark, thresholds)


def job_conditions(
    jobs: JobTable, watermark: int, thresholds: Thresholds, order: Iterable[str] | None = None
) -> Iterator[Condition]:
    """Broken chain and overdue, job by job in job id order (`order`: the jobs the deadline
    wheel visits, decision 0133, or every job).

    The hot loop reads the table's columns, not a view per job (decision 0093): what a job's
    profile decides (recurring, enabled, its next occurrence, whether it is finished, its
    interval for jobs created in the same month) is worked out once per profile per
    evaluation, and a job whose deadline (its latest baseline plus that interval) has not
    come is passed over with a few array reads. Every other job — past its deadline, or of a
    profile with a broken chain — goes through `_job_conditions`, which decides as before:
    the test only skips jobs for which that function would yield nothing."""
    # Jobs share schedules (a million jobs, a few thousand schedules): each schedule's next
    # occurrence after the watermark is computed once per evaluation.
    upcoming: dict[CompiledSchedule, int | None] = {}
    rows, profile_of, deleted, _, _, profiles = jobs.columns()
    deadlines = Deadlines(jobs, thresholds.derived_grace_ms)
    judged: dict[int, _Judged | None] = {}
    for job_id in sorted(jobs) if order is None else order:
        row = rows[job_id]
        number = profile_of[row]
        if number < 0 or deleted[row]:
            continue  # no definition, or deleted: nothing owed
        if number in judged:
            judgement = judged[number]
        else:
            profile = profiles[number]
            assert profile is not None
            judgement = judged[number] = _judge(profile, watermark, upcoming)
        if judgement is None:
            continue  # one-off, disabled, or a schedule that does not compile
        if not judgement.broken:
            deadline = deadlines.of(job_id, row)
            if deadline is None or watermark < deadline:
                continue  # not due: the common case, nothing to raise
        yield from _job_conditions(
            job_id, JobFacts(jobs, job_id, row), watermark, thresholds, upcoming
        )


@dataclass(slots=True)
class _Judged:
    """What one profile decides at one watermark, for every job that has it."""

    profile: JobProfile
    broken: bool  # no future occurrence and not finished: every such job has a broken chain


def _judge(
    profile: JobProfile, watermark: int, upcoming_of: dict[CompiledSchedule, int | None]
) -> _Judged | None:
    """None for a profile whose jobs can raise neither condition (as `_job_conditions`)."""
    schedule = profile.schedule
    if not profile.recurring or not profile.enabled or schedule is None:
        return None
    if schedule in upcoming_of:
        upcoming = upcoming_of[schedule]
    else:
        try:
            upcoming = schedule.next_after(watermark)
        except TickwheelError:
            upcoming = None
        upcoming_of[schedule] = upcoming
    finished = profile.bounded and (
        profile.last_slot_ms is None or profile.last_slot_ms <= watermark
    )
    return _Judged(profile, upcoming is None and not finished)


def diagnose(slot: int, facts: SlotFacts | None, fire_time: int, watermark: int) -> str:
    """What became of one owed slot, from the events seen."""
    if facts is None or (facts.stage == 0 and not facts.dead and not facts.skipped):
        return "not_due" if fire_time > watermark else "never_fired"
    if facts.dead:
        return "dead_lettered"
    if facts.stage >= 4:
        return "succeeded_late"
    if facts.stage == 3:
        return "failed_retrying"
    if facts.stage == 2:
        return "running"
    if facts.stage == 1:
        return "fired_not_started"
    return "skipped"


def _job_conditions(
    job_id: str,
    job: JobFacts,
    watermark: int,
    thresholds: Thresholds,
    upcoming_of: dict[CompiledSchedule, int | None],
) -> Iterator[Condition]:
    spec = job.spec
    if spec is None or job.deleted or not spec.recurring or not spec.enabled:
        return
    schedule = spec.schedule
    if schedule is None:
        return
    if schedule in upcoming_of:
        upcoming = upcoming_of[schedule]
    else:
        try:
            upcoming = schedule.next_after(watermark)
        except TickwheelError:
            upcoming = None
        upcoming_of[schedule] = upcoming
    finished = spec.finished(watermark)
    if upcoming is None and not finished:
        yield Condition(
            "broken_chain",
            job_id,
            "critical",
            f"job {job_id} is enabled and recurring but has no future occurrence",
            {"version": spec.version, "after": watermark},
            job_id=job_id,
            tenant_id=spec.tenant_id,
        )
    interval = effective_interval(spec, thresholds.derived_grace_ms)
    if interval is None:
        return
    baseline, since = spec.created_at_ms, "created"
    resumed = job.resumed_at_ms()
    if resumed is not None and resumed > baseline:
        baseline, since = resumed, "resumed"
    if spec.starts_at_ms is not None and spec.starts_at_ms > baseline:
        baseline, since = spec.starts_at_ms, "start_at"  # nothing was owed before it
    if job.last_success_ms is not None and job.last_success_ms > baseline:
        baseline, since = job.last_success_ms, "last_success"
    deadline = baseline + interval.ms
    if watermark < deadline:
        return
    # Owed: the slots after the one that last succeeded (or after the baseline).
    owed_from = job.last_success_slot if since == "last_success" else baseline
    assert owed_from is not None
    if spec.profile.unadjusted is not None:
        shifted = _calendar_deadline(
            spec.profile.unadjusted, schedule, owed_from, deadline, watermark
        )
        if shifted is None or watermark < shifted:
            return
        deadline = shifted
    owed, slots = _owed_slots(schedule, owed_from, watermark)
    if finished and owed == 0:
        return  # past its end with every slot since its baseline done: finished, not late
    shown = []
    for slot in slots:
        fire = slot + jitter_offset_ms(job_id, slot, spec.jitter_ms)
        facts = job.slots.get(slot)
        entry: dict[str, Any] = {"slot": slot, "diagnosis": diagnose(slot, facts, fire, watermark)}
        if facts is not None and facts.attempt:
            entry["attempt"] = facts.attempt
        if facts is not None and facts.worker:
            entry["worker"] = facts.worker
        shown.append(entry)
    latest = next((s["diagnosis"] for s in reversed(shown) if s["diagnosis"] != "not_due"), "")
    overdue_by = watermark - deadline
    severity: AlertSeverity = "critical" if overdue_by >= interval.ms else "warning"
    yield Condition(
        "job_overdue",
        job_id,
        severity,
        f"job {job_id} has not succeeded since {since} at {baseline} "
        f"(expected within {interval.ms} ms{', derived' if interval.derived else ''}): "
        f"{owed} owed slot(s), latest {latest or 'none due'}",
        {
            "since": since,
            "baseline": baseline,
            "deadline": deadline,
            "expected_max_interval_ms": interval.ms,
            "derived": interval.derived,
            "last_success": job.last_success_ms,
            "last_success_slot": job.last_success_slot,
            "owed_slots": owed,
            "slots": shown,
            "version": spec.version,
        },
        summary=f"{severity}:{latest}",
        job_id=job_id,
        tenant_id=spec.tenant_id,
        cause=latest,
    )


def _calendar_deadline(
    unadjusted: CompiledSchedule,
    schedule: CompiledSchedule,
    owed_from: int,
    deadline: int,
    watermark: int,
) -> int | None:
    """The deadline of a job that follows a holiday calendar (decision 0107).

    Its interval was declared (and checked) against its schedule with weekends only; the
    calendar skips or moves slots. By the plain deadline that schedule owed n slots; the
    deadline moves by as much as the n-th slot the calendar gives comes after the n-th slot
    it would have been without it: a slot skipped for a holiday is not owed, a moved slot is
    owed at its moved time. None: the calendar's schedule owes nothing up to `watermark`."""
    try:
        n = unadjusted.count(owed_from, deadline)
        if n < 1:
            return deadline
        regular = unadjusted.kth_after(owed_from, n, deadline)
        actual = schedule.kth_after(owed_from, n, watermark)
    except TickwheelError:
        return deadline
    if actual is None:
        return None
    assert regular is not None
    return deadline + max(0, actual - regular)


def _owed_slots(schedule: CompiledSchedule, after: int, watermark: int) -> tuple[int, list[int]]:
    """How many slots lie in (after, watermark], and the newest SLOTS_SHOWN of them."""
    try:
        count = schedule.count(after, watermark)
        if count <= SLOTS_SHOWN:
            return count, schedule.occurrences(after, watermark)
        start = schedule.kth_after(after, count - SLOTS_SHOWN, watermark)
        return count, schedule.occurrences(start or after, watermark)[-SLOTS_SHOWN:]
    except TickwheelError:
        return 0, []


def _dead_letter_ages(facts: Facts, watermark: int, thresholds: Thresholds) -> Iterator[Condition]:
    groups: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for execution_id, execution in facts.executions.items():
        if not execution.dead_unresolved or execution.dead_at_ms is None:
            continue
        job = facts.jobs.get(execution.job_id)
        if job is not None and job.deleted:
            continue  # the job is gone, and its dead letters with it
        spec = job.spec if job is not None else None
        tenant = execution.tenant_id or (spec.tenant_id if spec else None) or "unknown"
        job_type = execution.job_type or (spec.job_type if spec else None) or "unknown"
        groups.setdefault((tenant, job_type), []).append(
            (execution.dead_at_ms, execution_id, execution.job_id)
        )
    for (tenant, job_type), entries in sorted(groups.items()):
        oldest, execution_id, job_id = min(entries)
        age = watermark - oldest
        if age < thresholds.dead_letter_age_ms:
            continue
        yield Condition(
            "dead_letter_age",
            f"{tenant}/{job_type}",
            "warning",
            f"{len(entries)} unresolved dead letter(s) of {job_type} for tenant {tenant}, "
            f"the oldest {age // 1000} s old",
            {
                "count": len(entries),
                "oldest_at": oldest,
                "oldest_execution_id": execution_id,
                "oldest_job_id": job_id,
                "threshold_ms": thresholds.dead_letter_age_ms,
            },
            tenant_id=tenant,
        )


def _ready_ages(facts: Facts, watermark: int, thresholds: Thresholds) -> Iterator[Condition]:
    oldest: dict[tuple[str, str], tuple[int, str]] = {}
    depth: dict[tuple[str, str], int] = {}
    for execution_id, execution in facts.executions.items():
        if not execution.ready or execution.requested_at_ms is None:
            continue
        key = (execution.priority or "normal", execution.tenant_id or "unknown")
        depth[key] = depth.get(key, 0) + 1
        candidate = (execution.requested_at_ms, execution_id)
        if key not in oldest or candidate < oldest[key]:
            oldest[key] = candidate
    for (priority, tenant), (requested_at, execution_id) in sorted(oldest.items()):
        age = watermark - requested_at
        if age < thresholds.oldest_ready_age_ms:
            continue  # age, never depth: a young backlog of any size is a backfill at work
        yield Condition(
            "oldest_ready_age",
            f"{priority}/{tenant}",
            "warning",
            f"the oldest {priority} execution of tenant {tenant} has waited {age // 1000} s "
            "for a worker",
            {
                "age_ms": age,
                "oldest_requested_at": requested_at,
                "oldest_execution_id": execution_id,
                "depth": depth[(priority, tenant)],
                "threshold_ms": thresholds.oldest_ready_age_ms,
            },
            tenant_id=tenant,
        )
