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
    if trigger == "manual":
        # Fired outside the grid: its period runs from the last slot on the grid to now.
        previous = job.schedule.prev_before(slot)
        period_start, period_end = (slot if previous is None else previous), slot
    elif (
        previous is not None
        and previous < slot
        and shared_next_after(job.schedule, previous) == slot
    ):
        # The job's own previous slot is the period start: no search needed.
        period_start, period_end = previous, slot
    else:
        period_start, period_end = shared_period(job.schedule, slot)
    payload = job.payload
    if job.payload_template:
        payload = render_payload_template(
            job.payload_template,
            period_start_ms=period_start,
            period_end_ms=period_end,
            scheduled_ms=slot,
            timezone=job.timezone,
        )
    late = trigger in ("scheduled", "catch_up") and now_ms - fire_ms > LATE_AFTER_MS
    return {
        "execution_id": run_id or execution_id(job.job_id, job.version, slot),
        "job_id": job.job_id,
        "job_version": job.version,
        "job_type": job.job_type,
        "tenant_id": job.tenant_id,
        "priority": job.priority,
        "attempt": 1,
        "scheduled_time": slot,
        "fire_time": fire_ms,
        "period_start": period_start,
        "period_end": period_end,
        "payload": payload,
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
