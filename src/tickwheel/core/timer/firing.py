"""A due wheel entry, from the wheel to a request: an execution's deadline (a lease or retry
time), a dispatch deadline passed without a lease, or a job's slot, which waits in its tenant's
ready queue (within the job's backlog bound) until a batch fires it under its overlap and
misfire policies. Pure: `now_ms` is an argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tickwheel.core.overlap import OVERLAP_POLICIES
from tickwheel.core.timer.flight_book import IN_FLIGHT_BYTES_PER_JOB, PENDING_OVERHEAD_BYTES
from tickwheel.core.timer.jobs import JobEntry, cohort_next_after
from tickwheel.core.timer.occurrences import request_record, skipped_event
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.records import ExecutionTrigger

if TYPE_CHECKING:
    from tickwheel.core.timer.partition import PartitionScheduler

# While worker events lag behind, an expired lease waits at most this long past its deadline
# for a heartbeat that may be among them: a worker that is really gone is still replaced.
MAX_LEASE_HOLD_MS = 60_000


def fire_due(
    scheduler: PartitionScheduler, now_ms: int, hold_leases: bool, emission: PartitionWrites
) -> None:
    """The wheel's entries due at `now_ms`, then the ready queue served, at most `max_batch`
    occurrences. A job's next slot enters the wheel when its slot comes due, so a tick fires
    at most one slot of a job: a late turn does not catch a job up all at once (decision 0177
    measured the other way, and it lost slots). Nothing one job does raises out of here."""
    for entry, target in scheduler.horizon.due(now_ms):
        try:
            on_due(scheduler, entry, target, now_ms, hold_leases, emission)
        except Exception as exc:
            scheduler.job_failed(scheduler.job_of(target), "tick", exc, now_ms, emission)
    jobs = scheduler.jobs
    served = scheduler.ready.serve(
        scheduler.max_batch, scheduler.executions.by_tenant, scheduler.tenant_max_in_flight
    )
    for job_id, slot in served:
        job = jobs.get(job_id)
        if job is None or not job.enabled:
            continue
        try:
            fire(scheduler, job, slot, now_ms, emission)
        except Exception as exc:
            scheduler.job_failed(job_id, "fire", exc, now_ms, emission)


def dispatch_due(
    scheduler: PartitionScheduler, now_ms: int, hold_leases: bool, emission: PartitionWrites
) -> None:
    """Requests whose dispatch deadline passed without a lease (most were leased long ago:
    their entries are stale and pass by)."""
    while scheduler.dispatch_deadlines and scheduler.dispatch_deadlines[0][0] <= now_ms:
        deadline, execution_id, attempt = scheduler.dispatch_deadlines[0]
        if hold_leases and lease_held(scheduler, execution_id, deadline, now_ms):
            return  # its lease may be among the unread events; later ones wait behind it
        scheduler.dispatch_deadlines.popleft()
        try:
            decision, flight = scheduler.executions.on_deadline(
                execution_id, attempt, deadline, now_ms
            )
            emission.extend(scheduler.carry_out(decision, flight, now_ms))
        except Exception as exc:
            scheduler.job_failed(
                scheduler.job_of(("exec", execution_id)), "tick", exc, now_ms, emission
            )


def on_due(
    scheduler: PartitionScheduler, entry: int, target: tuple[Any, ...], now_ms: int, hold_leases: bool,
    emission: PartitionWrites,
) -> None:  # fmt: skip
    """A wheel entry came due: an execution's deadline, or a job's slot (which then waits
    in the ready queue, within the job's backlog bound)."""
    if target[0] == "exec":
        _, execution_id, attempt, deadline = target
        if hold_leases and lease_held(scheduler, execution_id, deadline, now_ms):
            scheduler.horizon.later(
                entry, target, now_ms + scheduler.tick_ms
            )  # looked at next tick
            return
        decision, flight = scheduler.executions.on_deadline(execution_id, attempt, deadline, now_ms)
        emission.extend(scheduler.carry_out(decision, flight, now_ms))
        return
    _, job_id, slot = target
    job = scheduler.jobs.get(job_id)
    if job is None or job.next_ms != slot:
        return
    job.handle = None
    # backlog_bound, inline: once per due slot.
    bound = max(1, job.max_catch_up) if job.misfire_policy == "catch_up" else 1
    for dropped in scheduler.ready.push(job.tenant_id, job_id, slot, bound):
        # Waiting behind its tenant's cap is an outage for this job: its misfire policy
        # decides, and what it drops is recorded (and persisted) as skipped.
        reason = (
            "misfire:max_catch_up"
            if job.misfire_policy == "catch_up"
            else (f"misfire:{job.misfire_policy}:backlog")
        )
        emission.events.append(skipped_event(job, dropped, now_ms, reason))
        if job.emitted_ms is None or job.emitted_ms < dropped:
            job.emitted_ms = dropped
        emission.states[job_id] = scheduler.state_of_entry(job, now_ms)
    # The next slot enters the wheel now, so a slow batch never delays the grid.
    job.last_scheduled_ms = slot  # provisional: emitted in this or a later batch
    if job.enabled:  # `materialise` inline (the walk resumes after `slot`): once per due slot
        nxt = job.next_ms = cohort_next_after(job.schedule, slot)
        if nxt is None:
            pass
        elif nxt <= now_ms + scheduler.horizon_ms:
            scheduler.insert(job, nxt)
        else:
            scheduler.horizon.park(job_id, nxt)


def lease_held(
    scheduler: PartitionScheduler, execution_id: str, deadline_ms: int, now_ms: int
) -> bool:
    flight = scheduler.executions.in_flight.get(execution_id)
    return (
        flight is not None
        and flight.state != "retry_wait"  # a retry timer is ours alone: it never waits
        and now_ms - deadline_ms < MAX_LEASE_HOLD_MS
    )


def fire(
    scheduler: PartitionScheduler, job: JobEntry, slot: int, now_ms: int, emission: PartitionWrites
) -> None:
    """Emit one scheduled occurrence, unless the overlap or misfire policy says otherwise."""
    previous = job.emitted_ms
    if previous is not None and slot <= previous:
        return  # superseded while it waited (a resume moved the watermark past it)
    job.emitted_ms = slot
    if job.job_id not in scheduler.executions.ids_by_job and job.overlap_policy in OVERLAP_POLICIES:
        action = reason = ""  # nothing of the job runs: every overlap policy fires
    else:
        decision = scheduler.overlap_of(job)
        action, reason = decision.action, decision.reason
    if job.misfire_policy == "skip" and now_ms - slot > scheduler.misfire_grace_ms:
        # It waited (behind its tenant's cap) past the grace: missed, as after an outage.
        emission.events.append(skipped_event(job, slot, now_ms, "misfire:skip:backlog"))
    elif action == "skip":
        emission.events.append(skipped_event(job, slot, now_ms, f"overlap:{reason}"))
    elif action == "queue":
        scheduler.held[job.job_id] = slot
    else:
        fire_ms = slot + scheduler.jitter_of(job, slot) if job.jitter_ms > 0 else slot
        if start_occurrence(scheduler, job, slot, fire_ms, now_ms, "scheduled", previous, emission):
            job.last_fire_ms = fire_ms
            # The request stands for the job's state until a quieter tick writes it.
            emission.unsaved.append(job.job_id)
            return
    emission.states[job.job_id] = scheduler.state_of_entry(job, now_ms)


def start_occurrence(
    scheduler: PartitionScheduler, job: JobEntry, slot: int, fire_ms: int, now_ms: int, trigger: ExecutionTrigger,
    previous: int | None, emission: PartitionWrites, run_id: str | None = None,
) -> bool:  # fmt: skip
    """Emit attempt 1 of (job, slot), or record the slot as skipped with the reason it
    cannot start: a payload that does not render (that job's problem alone), or a state
    already carrying as many in-flight requests as Kafka allows. Returns whether it fired.
    `run_id`: the execution id, when not the slot's own (a backfill's, decision 0121)."""
    terms = (scheduler.lease_seconds, scheduler.heartbeat_seconds)
    try:
        request = request_record(job, slot, fire_ms, now_ms, trigger, previous, terms, run_id)
    except Exception as exc:
        scheduler.report(
            "occurrence_rejected",
            "an occurrence's request could not be built; the slot is recorded as skipped",
            {"job_id": job.job_id, "slot": slot, "error": str(exc)},
        )
        emission.events.append(skipped_event(job, slot, now_ms, f"invalid_request:{exc}", run_id))
        return False
    executions = scheduler.executions
    # Whether the job's state can carry one more in-flight request (its `footprint`, inline:
    # once per occurrence).
    size = len(request["payload"].encode()) + PENDING_OVERHEAD_BYTES
    if executions.bytes_by_job.get(job.job_id, 0) + size > IN_FLIGHT_BYTES_PER_JOB:
        reason = "overlap" if trigger in ("scheduled", "catch_up") else trigger
        skipped = skipped_event(job, slot, now_ms, f"{reason}:in_flight_budget", run_id)
        emission.events.append(skipped)
        return False
    emission.requests.append(request)
    scheduler.hold_deadline(executions.started(request, size))
    return True
