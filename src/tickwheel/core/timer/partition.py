"""What one timer partition decides, without I/O: the jobs it owns, the wheel of their next
occurrences inside the horizon, and — at each tick — what to emit.

The Kafka loop (`service.py`) feeds it definitions, timer state and commands, calls `tick(now)`
and writes the returned `PartitionWrites` in one transaction. Nothing here reads a clock: `now_ms`
is always an argument, so the tests drive it with a fake clock.
"""

from __future__ import annotations

import bisect
import random
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.jitter import jitter_offset_ms
from tickwheel.core.overlap import OverlapDecision, decide_overlap
from tickwheel.core.timer.catch_up import catch_up, finish_restore
from tickwheel.core.timer.commands import job_command
from tickwheel.core.timer.executions import (
    DISPATCH_TIMEOUT_MS,
    Decision,
    ExecutionTracker,
    InFlight,
)
from tickwheel.core.timer.firing import dispatch_due, fire_due, start_occurrence
from tickwheel.core.timer.horizon import Horizon
from tickwheel.core.timer.jobs import (
    JobEntry,
    entry_from_definition,
    shared_next_after,
    start_after,
)
from tickwheel.core.timer.occurrences import job_dead_letter
from tickwheel.core.timer.ready import ReadyQueue
from tickwheel.core.timer.state_writes import refresh_fired_states, snapshot
from tickwheel.core.timer.states import (
    RestoringStates,
    job_state,
    orphan_state,
    pending_entries,
)
from tickwheel.core.timer.workflow_commands import fire_workflow_timers, workflow_command
from tickwheel.core.timer.workflow_steps import WorkflowTimers, is_workflow_command
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.records import ExecutionEvent, ExecutionRequest, JobDefinition, TimerCommand

# How the scheduler tells of a failure it contained (the service logs it): an action key,
# a message, and the ids that go with them. The core itself writes nothing anywhere.
FailureReport = Callable[[str, str, dict[str, Any]], None]


def _unreported(_action: str, _message: str, _fields: dict[str, Any]) -> None:
    pass


# Slots missed by less than this are simply late, not misfired: a failover of a few seconds
# must not make a `skip` job skip (Quartz's misfireThreshold plays the same role).
MISFIRE_GRACE_MS = 60_000


class PartitionScheduler:
    """The scheduling decisions of one partition (its jobs, their occurrences inside the
    horizon, their executions in flight): the service feeds it what it reads and writes the
    `PartitionWrites` each call returns. `calendars` gives the holiday calendars known now;
    `report` hears of each failure the scheduler contained."""

    def __init__(
        self,
        partition: int,
        horizon_ms: int,
        tick_ms: int,
        start_ms: int,
        max_batch: int,
        *,
        rng: random.Random | None = None,
        tenant_max_in_flight: int = 0,
        retry_base_ms: int = 1_000,
        retry_cap_ms: int = 300_000,
        misfire_grace_ms: int = MISFIRE_GRACE_MS,
        lease_seconds: int = 30,
        heartbeat_seconds: int = 10,
        dispatch_timeout_ms: int = DISPATCH_TIMEOUT_MS,
        calendars: Callable[[], Mapping[str, BusinessCalendar]] = dict,
        report: FailureReport = _unreported,
    ) -> None:
        self.partition = partition
        self.calendars = calendars
        self.report = report
        self.horizon_ms = horizon_ms
        self.max_batch = max_batch
        self.tenant_max_in_flight = tenant_max_in_flight
        self.misfire_grace_ms = misfire_grace_ms
        # Default lease terms written into each request; a worker's job type may override them.
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.jobs: dict[str, JobEntry] = {}
        self.tick_ms = tick_ms
        self.horizon = Horizon(tick_ms, start_ms)
        # Dispatch deadlines of queued requests, oldest first: every request gets the same
        # timeout, so they come due in the order they were set (a deque, not a wheel entry each:
        # a burst of a million requests costs a million appends).
        self.dispatch_deadlines: deque[tuple[int, str, int]] = deque()
        self.executions = ExecutionTracker(
            retry_base_ms, retry_cap_ms, rng or random.Random(0), dispatch_timeout_ms
        )
        # queue_one: the one occurrence held back while the job's previous run goes on.
        self.held: dict[str, int] = {}
        # Due occurrences waiting for a batch, per tenant, served round-robin.
        self.ready = ReadyQueue()
        self.restoring = RestoringStates()
        # Workflows' one-off timers and delayed attempts, and the inputs owed to workflows.
        self.workflows = WorkflowTimers()
        self.serving = False

    # -- restore ---------------------------------------------------------------------------
    def load_state(self, job_id: str, state: dict[str, Any] | None) -> None:
        """During restore: a job's timer state as read (None = deleted)."""
        self.restoring.load(job_id, state)

    def load_request(self, request: ExecutionRequest, seq: int) -> bool:
        """During restore, after states and definitions: a request from the request topics'
        tail, written by transaction `seq` (states.RestoringStates.apply_request)."""
        return self.restoring.apply_request(request, seq, self.jobs.get(request["job_id"]))

    def load_definition(self, job_id: str, record: JobDefinition | None) -> None:
        """During restore: remember the latest definition (None = deleted), and whether it
        resumed a paused job."""
        old = self.jobs.get(job_id)
        if record is None:
            self.jobs.pop(job_id, None)
            self.restoring.definition_read(job_id, old, None)
        else:
            job = self.jobs[job_id] = entry_from_definition(record, self.calendars())
            self.restoring.definition_read(job_id, old, job)

    def job_failed(
        self, job_id: str, stage: str, exc: Exception, now_ms: int, emission: PartitionWrites
    ) -> None:
        """One job's decision raised: it is that job's problem, never its partition's. The job
        leaves the wheel (its definition is kept, so a fixed edit or a restore brings it back),
        and a dead letter says which job and why."""
        self.report(
            "job_failed",
            "a job's scheduling failed; the job is set aside, its partition goes on",
            {"partition": self.partition, "job_id": job_id, "stage": stage, "error": repr(exc)},
        )
        job = self.jobs.get(job_id)
        if job is not None:
            self.unschedule(job)
        version = job.version if job is not None else 0
        emission.dead_letters.append(job_dead_letter(job_id, version, stage, exc, now_ms))

    def finish_restore(self, now_ms: int) -> PartitionWrites:
        """Walk every job forward from its last slot with its misfire policy, then fill the
        wheel to the horizon. Returns the catch-up and skip records to write."""
        return finish_restore(self, now_ms)

    # -- live changes ----------------------------------------------------------------------
    def apply_definition(
        self, job_id: str, record: JobDefinition | None, now_ms: int
    ) -> PartitionWrites:
        """A definition changed while serving: delete, pause, resume or edit."""
        old = self.jobs.get(job_id)
        emission = PartitionWrites()
        # Checked before anything changes: an invalid edit is refused (and dead-lettered by the
        # service) while the job keeps its old schedule.
        job = None if record is None else entry_from_definition(record, self.calendars())
        if (
            job is not None
            and old is not None
            and (job.version < old.version or (job.version == old.version and job.same_as(old)))
        ):
            # A replay of what we already hold (e.g. read during restore and again live).
            return emission
        if old is not None:
            self.unschedule(old)
        if job is None:
            self.jobs.pop(job_id, None)
            self.held.pop(job_id, None)
            if old is not None:
                # Tombstone the timer state, unless executions are still in flight: their
                # deadlines must survive a change of owner until they finish.
                emission.states[job_id] = self.orphan_state_of(job_id, now_ms)
            return emission
        # Two writers that both read version n publish two different n+1s: the later record
        # wins here as it does in compaction, so the live timer and any restore agree.
        if old is not None:
            job.last_scheduled_ms = old.last_scheduled_ms
            job.emitted_ms = old.emitted_ms
            job.last_fire_ms = old.last_fire_ms
        if old is not None and not old.enabled and job.enabled:
            # Resumed: slots that fell while paused are not owed (docs/decisions/0004).
            job.last_scheduled_ms = max(job.last_scheduled_ms or 0, job.updated_at_ms)
            job.emitted_ms = job.last_scheduled_ms
        self.jobs[job_id] = job
        try:
            emission.extend(catch_up(self, job, now_ms))
            self.materialise(job, now_ms)
        except Exception as exc:
            self.job_failed(job_id, "edit", exc, now_ms, emission)
        # Every change is persisted, so a pause or a resume survives a change of owner.
        emission.states[job_id] = self.state_of_entry(job, now_ms)
        return emission

    def unschedule(self, job: JobEntry) -> None:
        if job.handle is not None:
            self.horizon.cancel(job.entry, job.handle)
            job.handle = None
        self.horizon.unpark(job.job_id)
        job.next_ms = None

    # -- the walk --------------------------------------------------------------------------

    def jitter_of(self, job: JobEntry, slot_ms: int) -> int:
        if job.jitter_ms <= 0:
            return 0
        return jitter_offset_ms(job.job_id, slot_ms, job.jitter_ms)

    def materialise(self, job: JobEntry, now_ms: int) -> None:
        """Put the job's next slot in the wheel if it is inside the horizon, else park it."""
        if not job.enabled or job.handle is not None:
            return
        nxt = shared_next_after(job.schedule, start_after(job))
        job.next_ms = nxt
        if nxt is None:
            return
        if nxt <= now_ms + self.horizon_ms:
            self.insert(job, nxt)
        else:
            self.horizon.park(job.job_id, nxt)

    def insert(self, job: JobEntry, slot_ms: int) -> None:
        fire_ms = slot_ms + self.jitter_of(job, slot_ms)
        job.entry, job.handle = self.horizon.add_slot(job.job_id, slot_ms, fire_ms)

    def start_execution(self, request: ExecutionRequest, emission: PartitionWrites) -> None:
        """Emit attempt `request` of an execution and hold its dispatch deadline."""
        emission.requests.append(request)
        self.hold_deadline(self.executions.started(request))

    def hold_deadline(self, flight: InFlight) -> None:
        """Hold an execution's lease deadline or retry time in the wheel, or its dispatch
        deadline in the dispatch queue."""
        if flight.deadline_ms is None:
            return
        if flight.state == "queued":
            entry = (flight.deadline_ms, flight.request["execution_id"], flight.attempt)
            if self.dispatch_deadlines and self.dispatch_deadlines[-1][0] > flight.deadline_ms:
                bisect.insort(self.dispatch_deadlines, entry)  # a restored one: rare
            else:
                self.dispatch_deadlines.append(entry)
            return
        self.horizon.add_deadline(
            flight.request["execution_id"], flight.attempt, flight.deadline_ms
        )

    @property
    def wheel(self) -> Horizon:
        """What the wheel holds (its `len` is the wheel-size metric)."""
        return self.horizon

    def carry_out(
        self, decision: Decision, flight: InFlight | None, now_ms: int,
        into: PartitionWrites | None = None,
    ) -> PartitionWrites:  # fmt: skip
        """What `decision` writes, added to `into` if given: then the states of the jobs it
        changed are built once, as they stand when the transaction is sent (`changed`), not
        once per event (a worker's leased and succeeded usually come in the same turn)."""
        emission = PartitionWrites() if into is None else into
        emission.requests.extend(decision.requests)
        emission.events.extend(decision.events)
        emission.dead_letters.extend(decision.dead_letters)
        self.workflows.inputs.extend(decision.workflow_inputs)
        if flight is not None:
            self.hold_deadline(flight)
        for finished in decision.finished:
            held = self.held.pop(finished.request["job_id"], None)
            job = self.jobs.get(finished.request["job_id"])
            if held is not None and job is not None and job.enabled:
                fire_ms = held + self.jitter_of(job, held)
                start_occurrence(self, job, held, fire_ms, now_ms, "scheduled", None, emission)
        if into is not None:
            emission.changed.extend(decision.changed_jobs)
            return emission
        for job_id in decision.changed_jobs:
            emission.states[job_id] = self.state_of(job_id, now_ms)
        return emission

    def apply_decision(self, decision: Decision, now_ms: int) -> PartitionWrites:
        """What an execution decision made outside an event or a deadline writes."""
        return self.carry_out(decision, None, now_ms)

    # -- executions ------------------------------------------------------------------------
    def on_execution_event(
        self, event: ExecutionEvent, now_ms: int, into: PartitionWrites | None = None
    ) -> PartitionWrites:
        """A worker's leased/heartbeat/outcome event for an execution this partition owns
        (what it writes added to `into`, as `carry_out` does)."""
        decision, flight = self.executions.on_event(event, now_ms)
        return self.carry_out(decision, flight, now_ms, into)

    def refill(self, now_ms: int) -> None:
        for slot, job_id in self.horizon.reached(now_ms + self.horizon_ms):
            job = self.jobs.get(job_id)
            if job is not None and job.handle is None and job.next_ms == slot and job.enabled:
                self.insert(job, slot)

    # -- the tick --------------------------------------------------------------------------
    def tick(self, now_ms: int, *, hold_leases: bool = False) -> PartitionWrites:
        """Everything due at `now_ms`, at most `max_batch` occurrences, tenants round-robin.

        `hold_leases`: the partition's worker events are not read up to date, so an expired
        lease may have been renewed by a heartbeat still unread: its expiry waits (up to
        MAX_LEASE_HOLD_MS past the deadline) rather than re-running a live worker's job.

        Nothing one job does raises out of here: a job whose decision fails is set aside
        with a dead letter (`_job_failed`) and the others fire."""
        emission = PartitionWrites()
        if not self.serving:
            return emission
        self.refill(now_ms)
        dispatch_due(self, now_ms, hold_leases, emission)
        fire_workflow_timers(self, now_ms, emission)
        fire_due(self, now_ms, hold_leases, emission)
        return emission

    def job_of(self, target: tuple[Any, ...]) -> str:
        if target[0] == "slot":
            return str(target[1])
        flight = self.executions.in_flight.get(target[1])
        return "" if flight is None else str(flight.request["job_id"])

    def refresh_fired_states(self, emission: PartitionWrites, now_ms: int) -> None:
        """Before `emission` is written: the states it carries as they stand now
        (`state_writes.refresh_fired_states`)."""
        refresh_fired_states(self, emission, now_ms)

    def snapshot(self, job_ids: list[str], now_ms: int) -> PartitionWrites:
        """The current states of `job_ids` (unsaved jobs written by a quieter tick)."""
        return snapshot(self, job_ids, now_ms)

    def state_of(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        job = self.jobs.get(job_id)
        return (
            self.orphan_state_of(job_id, now_ms)
            if job is None
            else self.state_of_entry(job, now_ms)
        )

    def overlap_of(self, job: JobEntry) -> OverlapDecision:
        """The job's overlap policy on its next slot (the in-flight budget is `_start`'s)."""
        held = 1 if job.job_id in self.held else 0
        running = self.executions.running_count(job.job_id)
        return decide_overlap(job.overlap_policy, running, held)

    @property
    def backlog(self) -> int:
        return len(self.ready)

    # -- commands --------------------------------------------------------------------------
    def command(self, command: TimerCommand, now_ms: int) -> PartitionWrites:
        """Carry out a command: a workflow's, or a trigger or backfill (`commands.py`)."""
        if is_workflow_command(command):
            return workflow_command(self, command, now_ms)
        return job_command(self, command, now_ms)

    # -- records ---------------------------------------------------------------------------
    def state_of_entry(self, job: JobEntry, now_ms: int) -> dict[str, Any]:
        held = self.held.get(job.job_id)
        return job_state(job, pending_entries(self.executions, job.job_id, held), now_ms)

    def orphan_state_of(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        pending = self.executions.pending_of(job_id) + self.workflows.pending_of(job_id)
        return orphan_state(job_id, pending, now_ms)
