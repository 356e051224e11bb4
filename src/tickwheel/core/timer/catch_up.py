"""Bringing a partition's jobs up to now: the catch-up of slots missed by more than the
grace period (under each job's misfire and overlap policies), and the end of a restore, which
walks every restored job forward before the partition serves. Pure: `now_ms` is an argument.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tickwheel.core.timer.executions import LEASE_GRACE_MS
from tickwheel.core.timer.firing import start_occurrence
from tickwheel.core.timer.jobs import JobEntry, shared_walk, start_after, state_of_a_predecessor
from tickwheel.core.timer.occurrences import skipped_event
from tickwheel.core.timer.writes import PartitionWrites

if TYPE_CHECKING:
    from tickwheel.core.timer.partition import PartitionScheduler


def finish_restore(scheduler: PartitionScheduler, now_ms: int) -> PartitionWrites:
    """Walk every job forward from its last slot with its misfire policy, then fill the
    wheel to the horizon. Returns the catch-up and skip records to write."""
    emission = PartitionWrites()
    # In-flight executions first (even of a deleted job), so every state written below
    # carries them.
    for job_id, state in scheduler.restoring.states.items():
        try:
            restore_in_flight(scheduler, state, now_ms)
        except Exception as exc:  # one job's state never stops its partition's restore
            scheduler.job_failed(job_id, "restore_state", exc, now_ms, emission)
    for job in list(scheduler.jobs.values()):
        try:
            saved = scheduler.restoring.states.get(job.job_id)
            if saved is not None and not state_of_a_predecessor(saved, job):
                job.last_scheduled_ms = saved.get("last_scheduled_time")
                job.emitted_ms = job.last_scheduled_ms
                job.last_fire_ms = saved.get("last_fire_time")
            saved_version = None if saved is None else int(saved.get("job_version") or 0)
            emission.extend(catch_up_closed_spans(scheduler, job, saved_version, now_ms))
            resumed = scheduler.restoring.walk_on_from_the_resume(job)
            emission.extend(catch_up(scheduler, job, now_ms))
            scheduler.materialise(job, now_ms)
            if resumed:
                # Persisted: once compaction drops the paused version, a later restore reads
                # the resumed definition alone, and must find the watermark in the state.
                emission.states[job.job_id] = scheduler.state_of_entry(job, now_ms)
        except Exception as exc:
            scheduler.job_failed(job.job_id, "restore", exc, now_ms, emission)
    scheduler.restoring.clear()
    scheduler.serving = True
    return emission


def catch_up_closed_spans(
    scheduler: PartitionScheduler, job: JobEntry, saved_version: int | None, now_ms: int
) -> PartitionWrites:
    """The slots of the spans the job was enabled in before a pause the restore read and its
    state does not cover (the pause's version is newer than the state's): nobody served the
    partition then, so they are owed as an outage's, by the misfire policy (all of them missed:
    each span ended before the resume that follows it). A pause the state covers was read by
    an owner, which fired what it was going to fire before it (decision 0176)."""
    emission = PartitionWrites()
    for resumed_ms, paused_ms, version in scheduler.restoring.closed_spans.get(job.job_id, ()):
        if saved_version is not None and saved_version >= version:
            continue
        if resumed_ms is not None and (job.last_scheduled_ms or 0) < resumed_ms:
            # The slots of the pause before this span are not owed (decision 0159).
            job.last_scheduled_ms = job.emitted_ms = resumed_ms
        # A slot at the pause's instant is the pause's: the span's end is just before it.
        emission.extend(catch_up(scheduler, job, now_ms, until_ms=paused_ms - 1))
    return emission


def restore_in_flight(scheduler: PartitionScheduler, state: dict[str, Any], now_ms: int) -> None:
    for flight in scheduler.executions.restore(state.get("pending") or []):
        if flight.state == "running" and flight.deadline_ms is not None:
            # Heartbeats sent while nobody owned the partition are still unread: give
            # the worker a full lease from now before calling it dead.
            lease_ms = int(flight.request.get("lease_seconds") or 30) * 1000
            flight.deadline_ms = max(flight.deadline_ms, now_ms + lease_ms + LEASE_GRACE_MS)
        elif flight.state == "queued":
            # Leases taken while nobody owned the partition are still unread, too.
            flight.deadline_ms = scheduler.executions.dispatch_deadline(flight.request, now_ms)
        scheduler.hold_deadline(flight)
    for entry in state.get("pending") or []:
        if entry["kind"] == "manual" and entry["timer_id"].startswith("held:"):
            scheduler.held[state["job_id"]] = entry["fire_at"]
    scheduler.workflows.restore(state["job_id"], state.get("pending") or [])


def catch_up(
    scheduler: PartitionScheduler, job: JobEntry, now_ms: int, until_ms: int | None = None
) -> PartitionWrites:
    """Slots missed by more than the grace period, under the job's misfire policy; with
    `until_ms`, every slot up to that instant (a span that ended: all of it missed)."""
    emission = PartitionWrites()
    if not job.enabled:
        return emission
    cutoff = now_ms - scheduler.misfire_grace_ms if until_ms is None else until_ms
    start = start_after(job)
    if start >= cutoff:
        return emission
    walk = shared_walk(job.schedule, start, cutoff, job.misfire_policy, job.max_catch_up)
    # Non-firing slots come first in the walk, then the elided middle, then the fired ones.
    for missed in walk:
        if missed.disposition != "fire":
            emission.events.append(skipped_event(job, missed.scheduled_ms, now_ms, missed.reason))
    if walk.elided is not None:
        gap = walk.elided
        summary = skipped_event(job, gap.through_ms, now_ms, f"{gap.reason}:range")
        summary["details"] = json.dumps(
            {"job_version": job.version, "after": gap.after_ms, "through": gap.through_ms,
             "count": gap.count, "disposition": gap.disposition}
        )  # fmt: skip
        emission.events.append(summary)
    for missed in walk.to_fire:
        # Caught-up slots fire at once, so the overlap policy decides between them too: a
        # `skip` job runs the first and records the others as skipped.
        slot = missed.scheduled_ms
        decision = scheduler.overlap_of(job)
        if decision.action == "skip":
            emission.events.append(skipped_event(job, slot, now_ms, f"overlap:{decision.reason}"))
        elif decision.action == "queue":
            scheduler.held[job.job_id] = slot
        else:
            fire_ms = slot + scheduler.jitter_of(job, slot)
            start_occurrence(scheduler, job, slot, fire_ms, now_ms, "catch_up", None, emission)
    if walk.last_scheduled_ms is not None:
        job.last_scheduled_ms = walk.last_scheduled_ms
        job.emitted_ms = walk.last_scheduled_ms
    if emission or walk.to_fire:
        emission.states[job.job_id] = scheduler.state_of_entry(job, now_ms)
    return emission
