"""What one timer partition decides, without I/O: the jobs it owns, the wheel of their next
occurrences inside the horizon, and — at each tick — what to emit.

The Kafka loop (`service.py`) feeds it definitions, timer state and commands, calls `tick(now)`
and writes the returned `PartitionWrites` in one transaction. Nothing here reads a clock: `now_ms`
is always an argument, so the tests drive it with a fake clock.

`PartitionScheduler` is one class because its decisions share one state: a job's slot, its
executions in flight, its held occurrence and its timer state change together. The pieces that
own a part of that state on their own are its members: the wheel, the parked slots and the
dispatch deadlines (`Horizon`), the executions (`ExecutionTracker`), the ready queue, the
restoring states and the workflow timers.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.identity import execution_id as execution_id_of
from tickwheel.core.jitter import jitter_offset_ms
from tickwheel.core.overlap import OVERLAP_POLICIES, OverlapDecision, decide_overlap
from tickwheel.core.timer.commands import RejectedCommand, backfill_execution_id, command_slots
from tickwheel.core.timer.executions import (
    DISPATCH_TIMEOUT_MS,
    Decision,
    ExecutionTracker,
    InFlight,
)
from tickwheel.core.timer.flight_book import IN_FLIGHT_BYTES_PER_JOB, PENDING_OVERHEAD_BYTES
from tickwheel.core.timer.horizon import Horizon
from tickwheel.core.timer.jobs import (
    JobEntry,
    cohort_next_after,
    entry_from_definition,
    shared_next_after,
    shared_walk,
    start_after,
    state_of_a_predecessor,
)
from tickwheel.core.timer.occurrences import job_dead_letter, request_record, skipped_event
from tickwheel.core.timer.ready import ReadyQueue
from tickwheel.core.timer.states import (
    RestoringStates,
    job_state,
    orphan_state,
    pending_entries,
)
from tickwheel.core.timer.workflow_steps import (
    OneOff,
    WorkflowTimers,
    cancel_control,
    is_workflow_command,
    required,
    required_fire_at,
    step_outcome,
    step_request,
)
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.records import (
    ExecutionEvent,
    ExecutionRequest,
    ExecutionTrigger,
    JobDefinition,
    TimerCommand,
)

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
        emission = PartitionWrites()
        # In-flight executions first (even of a deleted job), so every state written below
        # carries them.
        for job_id, state in self.restoring.states.items():
            try:
                self.restore_in_flight(state, now_ms)
            except Exception as exc:  # one job's state never stops its partition's restore
                self.job_failed(job_id, "restore_state", exc, now_ms, emission)
        for job in list(self.jobs.values()):
            try:
                saved = self.restoring.states.get(job.job_id)
                if saved is not None and not state_of_a_predecessor(saved, job):
                    job.last_scheduled_ms = saved.get("last_scheduled_time")
                    job.emitted_ms = job.last_scheduled_ms
                    job.last_fire_ms = saved.get("last_fire_time")
                saved_version = None if saved is None else int(saved.get("job_version") or 0)
                emission.extend(self.catch_up_closed_spans(job, saved_version, now_ms))
                resumed = self.restoring.walk_on_from_the_resume(job)
                emission.extend(self.catch_up(job, now_ms))
                self.materialise(job, now_ms)
                if resumed:
                    # Persisted: once compaction drops the paused version, a later restore
                    # reads the resumed definition alone, and must find the watermark in the
                    # state.
                    emission.states[job.job_id] = self.state_of_entry(job, now_ms)
            except Exception as exc:
                self.job_failed(job.job_id, "restore", exc, now_ms, emission)
        self.restoring.clear()
        self.serving = True
        return emission

    def restore_in_flight(self, state: Mapping[str, Any], now_ms: int) -> None:
        """A restored state's executions in flight, its held occurrence and its workflow
        timers, back in their places."""
        executions = self.executions
        for flight in executions.restore(state.get("pending") or []):
            executions.extend_restored_deadline(flight, now_ms)
            self.hold_deadline(flight)
        for entry in state.get("pending") or []:
            if entry["kind"] == "manual" and entry["timer_id"].startswith("held:"):
                self.held[state["job_id"]] = entry["fire_at"]
        self.workflows.restore(state["job_id"], state.get("pending") or [])

    def catch_up_closed_spans(
        self, job: JobEntry, saved_version: int | None, now_ms: int
    ) -> PartitionWrites:
        """The slots of the spans the job was enabled in before a pause the restore read and
        its state does not cover (the pause's version is newer than the state's): nobody
        served the partition then, so they are owed as an outage's, by the misfire policy (all
        of them missed: each span ended before the resume that follows it). A pause the state
        covers was read by an owner, which fired what it was going to fire before it
        (decision 0176)."""
        emission = PartitionWrites()
        for resumed_ms, paused_ms, version in self.restoring.closed_spans.get(job.job_id, ()):
            if saved_version is not None and saved_version >= version:
                continue
            if resumed_ms is not None and (job.last_scheduled_ms or 0) < resumed_ms:
                # The slots of the pause before this span are not owed (decision 0159).
                job.last_scheduled_ms = job.emitted_ms = resumed_ms
            # A slot at the pause's instant is the pause's: the span's end is just before it.
            emission.extend(self.catch_up(job, now_ms, until_ms=paused_ms - 1))
        return emission

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
            emission.extend(self.catch_up(job, now_ms))
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

    def catch_up(self, job: JobEntry, now_ms: int, until_ms: int | None = None) -> PartitionWrites:
        """Slots missed by more than the grace period, under the job's misfire policy; with
        `until_ms`, every slot up to that instant (a span that ended: all of it missed)."""
        emission = PartitionWrites()
        if not job.enabled:
            return emission
        cutoff = now_ms - self.misfire_grace_ms if until_ms is None else until_ms
        start = start_after(job)
        if start >= cutoff:
            return emission
        walk = shared_walk(job.schedule, start, cutoff, job.misfire_policy, job.max_catch_up)
        # Non-firing slots come first in the walk, then the elided middle, then the fired ones.
        for missed in walk:
            if missed.disposition != "fire":
                skipped = skipped_event(job, missed.scheduled_ms, now_ms, missed.reason)
                emission.events.append(skipped)
        if walk.elided is not None:
            gap = walk.elided
            summary = skipped_event(job, gap.through_ms, now_ms, f"{gap.reason}:range")
            summary["details"] = json.dumps(
                {
                    "job_version": job.version,
                    "after": gap.after_ms,
                    "through": gap.through_ms,
                    "count": gap.count,
                    "disposition": gap.disposition,
                }
            )
            emission.events.append(summary)
        for missed in walk.to_fire:
            # Caught-up slots fire at once, so the overlap policy decides between them too: a
            # `skip` job runs the first and records the others as skipped.
            slot = missed.scheduled_ms
            decision = self.overlap_of(job)
            if decision.action == "skip":
                reason = f"overlap:{decision.reason}"
                emission.events.append(skipped_event(job, slot, now_ms, reason))
            elif decision.action == "queue":
                self.held[job.job_id] = slot
            else:
                fire_ms = slot + self.jitter_of(job, slot)
                self.start_occurrence(job, slot, fire_ms, now_ms, "catch_up", None, emission)
        if walk.last_scheduled_ms is not None:
            job.last_scheduled_ms = walk.last_scheduled_ms
            job.emitted_ms = walk.last_scheduled_ms
        if emission or walk.to_fire:
            emission.states[job.job_id] = self.state_of_entry(job, now_ms)
        return emission

    # -- executions ------------------------------------------------------------------------
    def start_occurrence(
        self,
        job: JobEntry,
        slot: int,
        fire_ms: int,
        now_ms: int,
        trigger: ExecutionTrigger,
        previous: int | None,
        emission: PartitionWrites,
        run_id: str | None = None,
    ) -> bool:
        """Emit attempt 1 of (job, slot), or record the slot as skipped with the reason it
        cannot start: a payload that does not render (that job's problem alone), or a state
        already carrying as many in-flight requests as Kafka allows. Returns whether it fired.
        `run_id`: the execution id, when not the slot's own (a backfill's, decision 0121)."""
        terms = (self.lease_seconds, self.heartbeat_seconds)
        try:
            request = request_record(job, slot, fire_ms, now_ms, trigger, previous, terms, run_id)
        except Exception as exc:
            self.report(
                "occurrence_rejected",
                "an occurrence's request could not be built; the slot is recorded as skipped",
                {"job_id": job.job_id, "slot": slot, "error": str(exc)},
            )
            reason = f"invalid_request:{exc}"
            emission.events.append(skipped_event(job, slot, now_ms, reason, run_id))
            return False
        executions = self.executions
        # Whether the job's state can carry one more in-flight request (its `footprint`,
        # inline: once per occurrence).
        size = len(request["payload"].encode()) + PENDING_OVERHEAD_BYTES
        if executions.bytes_by_job.get(job.job_id, 0) + size > IN_FLIGHT_BYTES_PER_JOB:
            reason = "overlap" if trigger in ("scheduled", "catch_up") else trigger
            skipped = skipped_event(job, slot, now_ms, f"{reason}:in_flight_budget", run_id)
            emission.events.append(skipped)
            return False
        emission.requests.append(request)
        self.hold_deadline(executions.started(request, size))
        return True

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
            self.horizon.add_dispatch_deadline(
                flight.request["execution_id"], flight.attempt, flight.deadline_ms
            )
            return
        self.horizon.add_deadline(
            flight.request["execution_id"], flight.attempt, flight.deadline_ms
        )

    @property
    def wheel(self) -> Horizon:
        """What the wheel holds (its `len` is the wheel-size metric)."""
        return self.horizon

    def carry_out(
        self,
        decision: Decision,
        flight: InFlight | None,
        now_ms: int,
        into: PartitionWrites | None = None,
    ) -> PartitionWrites:
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
                self.start_occurrence(job, held, fire_ms, now_ms, "scheduled", None, emission)
        if into is not None:
            emission.changed.extend(decision.changed_jobs)
            return emission
        for job_id in decision.changed_jobs:
            emission.states[job_id] = self.state_of(job_id, now_ms)
        return emission

    def apply_decision(self, decision: Decision, now_ms: int) -> PartitionWrites:
        """What an execution decision made outside an event or a deadline writes."""
        return self.carry_out(decision, None, now_ms)

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
        with a dead letter (`job_failed`) and the others fire."""
        emission = PartitionWrites()
        if not self.serving:
            return emission
        self.refill(now_ms)
        self.dispatch_due(now_ms, hold_leases, emission)
        self.fire_workflow_timers(now_ms, emission)
        self.fire_due(now_ms, hold_leases, emission)
        return emission

    def dispatch_due(self, now_ms: int, hold_leases: bool, emission: PartitionWrites) -> None:
        """Requests whose dispatch deadline passed without a lease (most were leased long ago:
        their entries are stale and pass by)."""
        horizon = self.horizon
        while (due := horizon.next_dispatch_due(now_ms)) is not None:
            deadline, execution_id, attempt = due
            if hold_leases and self.executions.lease_held(execution_id, deadline, now_ms):
                return  # its lease may be among the unread events; later ones wait behind it
            horizon.pass_dispatch_due()
            try:
                decision, flight = self.executions.on_deadline(
                    execution_id, attempt, deadline, now_ms
                )
                emission.extend(self.carry_out(decision, flight, now_ms))
            except Exception as exc:
                job_id = self.job_of(("exec", execution_id))
                self.job_failed(job_id, "tick", exc, now_ms, emission)

    def fire_workflow_timers(self, now_ms: int, emission: PartitionWrites) -> None:
        """Workflow timers due at `now_ms`: a fold timer fires (TimerFired to its workflow), a
        delayed attempt starts. Each is gone from its key's state in the same transaction."""
        for due in self.workflows.due(now_ms):
            if due.request is not None:
                self.start_execution({**due.request, "requested_at": now_ms}, emission)
            else:
                self.workflows.inputs.append(self.workflows.fired_input(due))
            emission.states[due.key] = self.state_of(due.key, now_ms)

    def fire_due(self, now_ms: int, hold_leases: bool, emission: PartitionWrites) -> None:
        """The wheel's entries due at `now_ms`, then the ready queue served, at most `max_batch`
        occurrences. A job's next slot enters the wheel when its slot comes due, so a tick fires
        at most one slot of a job: a late turn does not catch a job up all at once (decision
        0177 measured the other way, and it lost slots). Nothing one job does raises out of
        here."""
        for entry, target in self.horizon.due(now_ms):
            try:
                self.on_due(entry, target, now_ms, hold_leases, emission)
            except Exception as exc:
                self.job_failed(self.job_of(target), "tick", exc, now_ms, emission)
        jobs = self.jobs
        served = self.ready.serve(
            self.max_batch, self.executions.by_tenant, self.tenant_max_in_flight
        )
        for job_id, slot in served:
            job = jobs.get(job_id)
            if job is None or not job.enabled:
                continue
            try:
                self.fire(job, slot, now_ms, emission)
            except Exception as exc:
                self.job_failed(job_id, "fire", exc, now_ms, emission)

    def on_due(
        self,
        entry: int,
        target: tuple[Any, ...],
        now_ms: int,
        hold_leases: bool,
        emission: PartitionWrites,
    ) -> None:
        """A wheel entry came due: an execution's deadline, or a job's slot (which then waits
        in the ready queue, within the job's backlog bound)."""
        if target[0] == "exec":
            _, execution_id, attempt, deadline = target
            if hold_leases and self.executions.lease_held(execution_id, deadline, now_ms):
                self.horizon.later(entry, target, now_ms + self.tick_ms)  # looked at next tick
                return
            decision, flight = self.executions.on_deadline(execution_id, attempt, deadline, now_ms)
            emission.extend(self.carry_out(decision, flight, now_ms))
            return
        _, job_id, slot = target
        job = self.jobs.get(job_id)
        if job is None or job.next_ms != slot:
            return
        job.handle = None
        # backlog_bound, inline: once per due slot.
        bound = max(1, job.max_catch_up) if job.misfire_policy == "catch_up" else 1
        for dropped in self.ready.push(job.tenant_id, job_id, slot, bound):
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
            emission.states[job_id] = self.state_of_entry(job, now_ms)
        # The next slot enters the wheel now, so a slow batch never delays the grid.
        job.last_scheduled_ms = slot  # provisional: emitted in this or a later batch
        if job.enabled:  # `materialise` inline (the walk resumes after `slot`): once per due slot
            nxt = job.next_ms = cohort_next_after(job.schedule, slot)
            if nxt is None:
                pass
            elif nxt <= now_ms + self.horizon_ms:
                self.insert(job, nxt)
            else:
                self.horizon.park(job_id, nxt)

    def fire(self, job: JobEntry, slot: int, now_ms: int, emission: PartitionWrites) -> None:
        """Emit one scheduled occurrence, unless the overlap or misfire policy says otherwise."""
        previous = job.emitted_ms
        if previous is not None and slot <= previous:
            return  # superseded while it waited (a resume moved the watermark past it)
        job.emitted_ms = slot
        if job.job_id not in self.executions.ids_by_job and job.overlap_policy in OVERLAP_POLICIES:
            action = reason = ""  # nothing of the job runs: every overlap policy fires
        else:
            decision = self.overlap_of(job)
            action, reason = decision.action, decision.reason
        if job.misfire_policy == "skip" and now_ms - slot > self.misfire_grace_ms:
            # It waited (behind its tenant's cap) past the grace: missed, as after an outage.
            emission.events.append(skipped_event(job, slot, now_ms, "misfire:skip:backlog"))
        elif action == "skip":
            emission.events.append(skipped_event(job, slot, now_ms, f"overlap:{reason}"))
        elif action == "queue":
            self.held[job.job_id] = slot
        else:
            fire_ms = slot + self.jitter_of(job, slot) if job.jitter_ms > 0 else slot
            if self.start_occurrence(job, slot, fire_ms, now_ms, "scheduled", previous, emission):
                job.last_fire_ms = fire_ms
                # The request stands for the job's state until a quieter tick writes it.
                emission.unsaved.append(job.job_id)
                return
        emission.states[job.job_id] = self.state_of_entry(job, now_ms)

    def job_of(self, target: tuple[Any, ...]) -> str:
        if target[0] == "slot":
            return str(target[1])
        flight = self.executions.in_flight.get(target[1])
        return "" if flight is None else str(flight.request["job_id"])

    def overlap_of(self, job: JobEntry) -> OverlapDecision:
        """The job's overlap policy on its next slot (the in-flight budget is
        `start_occurrence`'s)."""
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
            return self.workflow_command(command, now_ms)
        return self.job_command(command, now_ms)

    def job_command(self, command: TimerCommand, now_ms: int) -> PartitionWrites:
        """Carry out a trigger or backfill. Raises RejectedCommand (for a dead letter) when it
        cannot be: an unknown job, kind or range."""
        job = self.jobs.get(command["job_id"])
        if job is None:
            raise RejectedCommand(
                command, f"no job {command['job_id']!r} on partition {self.partition}"
            )
        trigger, slots = command_slots(job, command)
        emission = PartitionWrites()
        in_flight = self.executions.in_flight
        for slot in slots:
            # A trigger is fired at once; a backfill slot too (its period is the slot's own),
            # as an execution of its own (decision 0121).
            fire_ms = now_ms
            run_id = None
            if trigger == "backfill":
                run_id = backfill_execution_id(
                    str(command.get("command_id") or ""), job.job_id, job.version, slot
                )
            if execution_id_of(job.job_id, job.version, slot) in in_flight or run_id in in_flight:
                # That occurrence (or this very backfill of it) is still running: it stands.
                skipped = skipped_event(job, slot, now_ms, f"{trigger}:in_flight", run_id)
                emission.events.append(skipped)
                continue
            self.start_occurrence(job, slot, fire_ms, now_ms, trigger, None, emission, run_id)
        emission.states[job.job_id] = self.state_of_entry(job, now_ms)
        return emission

    def workflow_command(self, command: TimerCommand, now_ms: int) -> PartitionWrites:
        """Carry out a run_step, start_timer, cancel_timer or cancel_execution command. Each
        changes its step key's state, written in the same transaction as the requests,
        cancels and inputs it causes."""
        emission = PartitionWrites()
        key, kind = command["job_id"], command["kind"]
        if kind == "run_step":
            self._run_step(command, now_ms, emission)
        elif kind == "start_timer":
            timer_id, workflow_id = required(command, "timer_id"), required(command, "workflow_id")
            self.workflows.add(OneOff(key, timer_id, workflow_id, required_fire_at(command)))
        elif kind == "cancel_timer":
            self.workflows.remove(key, required(command, "timer_id"))
        else:
            self._cancel_execution(command, now_ms, emission)
        emission.states[key] = self.state_of(key, now_ms)
        return emission

    def _run_step(self, command: TimerCommand, now_ms: int, emission: PartitionWrites) -> None:
        key, execution_id = command["job_id"], required(command, "execution_id")
        attempt = int(command["attempt"])
        flight = self.executions.in_flight.get(execution_id)
        if flight is not None and flight.attempt >= attempt:
            return  # this attempt (or a later one) is out already: a repeat changes nothing
        if flight is not None:
            self.executions.drop(execution_id)  # an operator's retry replaces the attempt
        self.workflows.remove_all_delayed(key, execution_id)
        request = step_request(command, now_ms, (self.lease_seconds, self.heartbeat_seconds))
        not_before = int(command.get("fire_at") or 0)
        if not_before > now_ms:
            self.workflows.delay(key, request, not_before)
            return
        self.start_execution(request, emission)

    def _cancel_execution(
        self, command: TimerCommand, now_ms: int, emission: PartitionWrites
    ) -> None:
        """Stop the attempt, and owe the workflow its verdict: at once for an attempt no worker
        holds, from the worker (cancelled, or what it finished with) for a running one. An
        attempt already over has had its verdict sent: nothing to do."""
        key, execution_id = command["job_id"], required(command, "execution_id")
        attempt = int(command["attempt"])
        delayed = self.workflows.remove_delayed(key, execution_id, attempt)
        if delayed is not None and delayed.request is not None:
            self.workflows.inputs.append(step_outcome(delayed.request, "cancelled", now_ms))
            return
        flight = self.executions.in_flight.get(execution_id)
        if flight is None or flight.attempt != attempt:
            return
        control_id = f"wf-cancel:{execution_id}:{attempt}"
        control = cancel_control(control_id, execution_id, key, now_ms, attempt)
        self.workflows.controls.append(control)
        if flight.state == "queued":
            decision = self.executions.cancel_queued(execution_id, now_ms)
            emission.extend(self.apply_decision(decision, now_ms))

    # -- records ---------------------------------------------------------------------------
    def refresh_fired_states(self, emission: PartitionWrites, now_ms: int) -> None:
        """Before `emission` is written: the jobs an event `changed` get their state (as
        `carry_out` leaves them, once each); a job that fired in it and also has a state in it
        gets its state as it stands now (a state built before the fire would claim, by its
        seq, to have seen a request it has not). The others stay "unsaved": their requests
        stand for their states until a quieter tick writes them (decision 0008)."""
        states = emission.states
        # Built just now, after the tick's fires: already as they stand (under a steady load a
        # turn reads a job's events and fires its next slot, so most fired jobs are here).
        fresh: dict[str, None] = {}
        if emission.changed:
            fresh = dict.fromkeys(emission.changed)
            for job_id in fresh:
                states[job_id] = self.state_of(job_id, now_ms)
            emission.changed = []
        if not emission.unsaved:
            return
        unsaved = []
        for job_id in dict.fromkeys(emission.unsaved):
            if job_id in states:
                if job_id not in fresh:
                    states[job_id] = self.state_of(job_id, now_ms)
            else:
                unsaved.append(job_id)
        emission.unsaved = unsaved

    def snapshot(self, job_ids: list[str], now_ms: int) -> PartitionWrites:
        """The current states of `job_ids` (unsaved jobs written by a quieter tick)."""
        # `state_of` inline: after a burst this runs once per job that fired.
        jobs, held, executions = self.jobs, self.held, self.executions
        emission = PartitionWrites()
        states = emission.states
        for job_id in job_ids:
            job = jobs.get(job_id)
            if job is None:
                states[job_id] = self.orphan_state_of(job_id, now_ms)
            else:
                pending = pending_entries(executions, job_id, held.get(job_id))
                states[job_id] = job_state(job, pending, now_ms)
        return emission

    def state_of(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        job = self.jobs.get(job_id)
        return (
            self.orphan_state_of(job_id, now_ms)
            if job is None
            else self.state_of_entry(job, now_ms)
        )

    def state_of_entry(self, job: JobEntry, now_ms: int) -> dict[str, Any]:
        held = self.held.get(job.job_id)
        return job_state(job, pending_entries(self.executions, job.job_id, held), now_ms)

    def orphan_state_of(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        pending = self.executions.pending_of(job_id) + self.workflows.pending_of(job_id)
        return orphan_state(job_id, pending, now_ms)
