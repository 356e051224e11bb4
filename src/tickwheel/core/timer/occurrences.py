"""The records one occurrence produces: the request that runs it, or the event that says it
was skipped. Pure: every instant is an argument."""

from __future__ import annotations

import json

from tickwheel.core.identity import execution_id
from tickwheel.core.period import render_payload_template
from tickwheel.core.timer.jobs import JobEntry, shared_next_after, shared_period
from tickwheel.records import DeadLetter, ExecutionEvent, ExecutionRequest, ExecutionTrigger

# An emission later than this after its fire time is flagged `late`.
LATE_AFTER_MS = 1_000


# The last cohort asked (decision 0185): jobs on one compiled schedule (compiled schedules are
# shared objects), emitted for the same slot at the same instant by the same trigger after the
# same previous slot, whatever their jitter. A burst's jobs come one cohort after another; the
# next request of the cohort is a copy of its template (the request of its first job) with the
# job's own fields and fire time set. Only immutable values: a copy shares nothing a caller
# could change. One tuple, read and replaced whole: a restore's thread builds requests too,
# and a key must never meet another cohort's template.
# (key, template, (period start, period end), a fire time before which it is `late` or None)
_Cohort = tuple[tuple[object, ...], ExecutionRequest, tuple[int, int], int | None]
_LAST_COHORT: list[_Cohort | None] = [None]


def request_record(
    job: JobEntry,
    slot: int,
    fire_ms: int,
    now_ms: int,
    trigger: ExecutionTrigger,
    previous: int | None,
    lease_terms: tuple[int, int],
    run_id: str | None = None,
) -> ExecutionRequest:
    """The `ExecutionRequest` of attempt 1 of (job, slot), fired at `fire_ms`, emitted at
    `now_ms`; `lease_terms` = (lease seconds, heartbeat seconds) written into it. `run_id`:
    its execution id when it is not the slot's own (a backfill's rerun, decision 0121)."""
    schedule = job.schedule
    cohort = _LAST_COHORT[0]
    if cohort is None or not (
        (key := cohort[0])[0] is schedule
        and key[1] == slot
        and key[2] == now_ms
        and key[3] == trigger
        and key[4] == previous
        and key[5] == lease_terms
    ):
        period = _period(job, slot, trigger, previous)
        late = trigger in ("scheduled", "catch_up")
        cohort = (
            (schedule, slot, now_ms, trigger, previous, lease_terms),
            _shared_fields(job, slot, fire_ms, now_ms, trigger, period, lease_terms),
            period,
            now_ms - LATE_AFTER_MS if late else None,
        )
        _LAST_COHORT[0] = cohort
    _key, template, period, late_before = cohort
    request = template.copy()
    # Jittered jobs of a cohort fire at their own instants.
    request["fire_time"] = fire_ms
    request["late"] = late_before is not None and fire_ms < late_before
    payload = job.payload
    if job.payload_template:
        payload = render_payload_template(
            job.payload_template,
            period_start_ms=period[0],
            period_end_ms=period[1],
            scheduled_ms=slot,
            timezone=job.timezone,
        )
    request["execution_id"] = run_id or execution_id(job.job_id, job.version, slot)
    request["job_id"] = job.job_id
    request["job_version"] = job.version
    request["job_type"] = job.job_type
    request["tenant_id"] = job.tenant_id
    request["priority"] = job.priority
    request["payload"] = payload
    request["max_attempts"] = job.max_attempts
    request["max_run_seconds"] = job.max_run_seconds
    request["queue"] = job.queue
    return request


def _period(
    job: JobEntry, slot: int, trigger: ExecutionTrigger, previous: int | None
) -> tuple[int, int]:
    """The (start, end) of the period that (job, slot) closes."""
    if trigger == "manual":
        # Fired outside the grid: its period runs from the last slot on the grid to now.
        previous = job.schedule.prev_before(slot)
        return (slot if previous is None else previous), slot
    if (
        previous is not None
        and previous < slot
        and shared_next_after(job.schedule, previous) == slot
    ):
        return previous, slot  # the job's own previous slot is the period start: no search
    return shared_period(job.schedule, slot)


def _shared_fields(
    job: JobEntry,
    slot: int,
    fire_ms: int,
    now_ms: int,
    trigger: ExecutionTrigger,
    period: tuple[int, int],
    lease_terms: tuple[int, int],
) -> ExecutionRequest:
    """The request of `job` with the fields that depend on its cohort alone (its schedule,
    slot, instants, trigger and previous slot) in the record's field order; `request_record`
    sets the job's own ones (its id, version, type, tenant, priority, payload, attempts, run
    time and queue) on each copy."""
    late = trigger in ("scheduled", "catch_up") and now_ms - fire_ms > LATE_AFTER_MS
    return {
        "execution_id": "",
        "job_id": job.job_id,
        "job_version": job.version,
        "job_type": job.job_type,
        "tenant_id": job.tenant_id,
        "priority": job.priority,
        "attempt": 1,
        "scheduled_time": slot,
        "fire_time": fire_ms,
        "period_start": period[0],
        "period_end": period[1],
        "payload": job.payload,
        "max_attempts": job.max_attempts,
        "trigger": trigger,
        "late": late,
        "requested_at": now_ms,
        "lease_seconds": lease_terms[0],
        "heartbeat_seconds": lease_terms[1],
        "max_run_seconds": job.max_run_seconds,
        "queue": job.queue,
        "workflow_id": None,
        "step_id": None,
    }


def skipped_event(
    job: JobEntry, slot: int, now_ms: int, reason: str, run_id: str | None = None
) -> ExecutionEvent:
    """The `skipped` event of (job, slot), or of the execution `run_id` that would have run it
    (a backfill's rerun): recorded, never dropped."""
    run_id = run_id or execution_id(job.job_id, job.version, slot)
    return {
        "event_id": f"timer:skipped:{run_id}",
        "event_time": now_ms,
        "event_type": "skipped",
        "job_id": job.job_id,
        "job_type": job.job_type,
        "tenant_id": job.tenant_id,
        "execution_id": run_id,
        "attempt": 0,
        "scheduled_time": slot,
        "fire_time": None,
        "worker_id": None,
        "lease_deadline": None,
        "error": None,
        "error_kind": None,
        "reason": reason,
        "details": json.dumps({"job_version": job.version}),
    }


def job_dead_letter(
    job_id: str, version: int, stage: str, error: Exception, now_ms: int
) -> DeadLetter:
    """The `DeadLetter` saying a job was set aside: its scheduling raised at `stage` (restore,
    tick, fire, edit). One per job, version and stage, so a restore that meets it again
    writes the same dead letter (the history sink de-duplicates it)."""
    return {
        "dead_letter_id": f"job:{job_id}:v{version}:{stage}",
        "event_time": now_ms,
        "reason": f"job_failed: {stage}: {error}"[:2_000],
        "source_topic": "jobs.definitions",
        "source_partition": -1,
        "source_offset": -1,
        "execution_id": None,
        "job_id": job_id,
        "attempt": None,
        "error": repr(error)[:2_000],
        "payload": None,
        "raw_value": None,
    }
