"""Which timer states a partition's next transaction carries, built as they stand when it is
sent: the jobs that fired in it and have a state in it, and the jobs an event changed (built
once however many of their events the turn read). Pure: `now_ms` is an argument."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tickwheel.core.timer.states import job_state, pending_entries
from tickwheel.core.timer.writes import PartitionWrites

if TYPE_CHECKING:
    from tickwheel.core.timer.partition import PartitionScheduler


def refresh_fired_states(
    scheduler: PartitionScheduler, emission: PartitionWrites, now_ms: int
) -> None:
    """Before `emission` is written: the jobs an event `changed` get their state (as
    `carry_out` leaves them, once each); a job that fired in it and also has a state in it
    gets its state as it stands now (a state built before the fire would claim, by its seq,
    to have seen a request it has not). The others stay "unsaved": their requests stand for
    their states until a quieter tick writes them (decision 0008)."""
    states = emission.states
    # Built just now, after the tick's fires: already as they stand (under a steady load a
    # turn reads a job's events and fires its next slot, so most fired jobs are here).
    fresh: dict[str, None] = {}
    if emission.changed:
        fresh = dict.fromkeys(emission.changed)
        for job_id in fresh:
            states[job_id] = scheduler.state_of(job_id, now_ms)
        emission.changed = []
    if not emission.unsaved:
        return
    unsaved = []
    for job_id in dict.fromkeys(emission.unsaved):
        if job_id in states:
            if job_id not in fresh:
                states[job_id] = scheduler.state_of(job_id, now_ms)
        else:
            unsaved.append(job_id)
    emission.unsaved = unsaved


def snapshot(scheduler: PartitionScheduler, job_ids: list[str], now_ms: int) -> PartitionWrites:
    """The current states of `job_ids` (unsaved jobs written by a quieter tick)."""
    # `state_of` inline: after a burst this runs once per job that fired.
    jobs, held, executions = scheduler.jobs, scheduler.held, scheduler.executions
    states: dict[str, dict[str, Any] | None] = {}
    for job_id in job_ids:
        job = jobs.get(job_id)
        if job is None:
            states[job_id] = scheduler.orphan_state_of(job_id, now_ms)
        else:
            pending = pending_entries(executions, job_id, held.get(job_id))
            states[job_id] = job_state(job, pending, now_ms)
    return PartitionWrites(states=states)
