"""What one timer partition decides, without I/O: the jobs it owns, the wheel of their next
occurrences inside the horizon, and — at each tick — what to emit.

The Kafka loop (`service.py`) feeds it definitions, timer state and commands, calls `tick(now)`
and writes the returned `Emission` in one transaction. Nothing here reads a clock: `now_ms`
is always an argument, so the tests drive it with a fake clock.
"""

from __future__ import annotations

import bisect
import json
import logging
import random
from collections import deque
from typing import Any

from tickwheel.core.identity import execution_id as execution_id_of
from tickwheel.core.jitter import jitter_offset_ms
from tickwheel.core.overlap import OverlapDecision, decide_overlap
from tickwheel.services.timer.commands import RejectedCommand, command_slots
from tickwheel.services.timer.executions import (
    DISPATCH_TIMEOUT_MS,
    LEASE_GRACE_MS,
    Decision,
    ExecutionTracker,
    InFlight,
)
from tickwheel.services.timer.horizon import Horizon
from tickwheel.services.timer.model import (
    Emission,
    JobEntry,
    belongs_to_a_namesake,
    entry_from_definition,
    shared_next_after,
    shared_walk,
)
from tickwheel.services.timer.occurrences import job_dead_letter, request_record, skipped_event
from tickwheel.services.timer.ready import ReadyQueue, backlog_bound
from tickwheel.services.timer.states import (
    RestoringStates,
    job_state,
    orphan_state,
    pending_entries,
)
from tickwheel.services.timer.workflow_partition import fire_workflow_timers, workflow_command
from tickwheel.services.timer.workflow_steps import WorkflowTimers, is_workflow_command

log = logging.getLogger("tickwheel.timer")

# Slots missed by less than this are simply late, not misfired: a failover of a few seconds
# must not make a `skip` job skip (Quartz's misfireThreshold plays the same role).
MISFIRE_GRACE_MS = 60_000
# While worker events lag behind, an expired lease waits at most this long past its deadline
# for a heartbeat that may be among them: a worker that is really gone is still replaced.
MAX_LEASE_HOLD_MS = 60_000


class PartitionTimer:
    """The jobs of one partition and their occurrences inside the horizon."""

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
    ) -> None:
        self.partition = partition
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
        self._dispatch: deque[tuple[int, str, int]] = deque()
        self.executions = ExecutionTracker(
            retry_base_ms, retry_cap_ms, rng or random.Random(0), dispatch_timeout_ms
        )
        # queue_one: the one occurrence held back while the job's previous run goes on.
        self._held: dict[str, int] = {}
        # Due occurrences waiting for a batch, per tenant, served round-robin.
        self._ready = ReadyQueue()
        self._restoring = RestoringStates()
        # Workflows' one-off timers and delayed attempts, and the inputs owed to workflows.
        self.workflows = WorkflowTimers()
        self.serving = False

    # -- restore ---------------------------------------------------------------------------
    def load_state(self, job_id: str, state: dict[str, Any] | None) -> None:
        """During restore: a job's timer state as read (None = deleted)."""
        self._restoring.load(job_id, state)

    def load_request(self, request: dict[str, Any], seq: int) -> bool:
        """During restore, after states and definitions: a request from the request topics'
        tail, written by transaction `seq` (states.RestoringStates.apply_request)."""
        return self._restoring.apply_request(request, seq, self.jobs.get(request["job_id"]))

    def load_definition(self, job_id: str, record: dict[str, Any] | None) -> None:
        """During restore: remember the latest definition (None = deleted)."""
        if record is None:
            self.jobs.pop(job_id, None)
        else:
            self.jobs[job_id] = entry_from_definition(record)

    def finish_restore(self, now_ms: int) -> Emission:
        """Walk every job forward from its last slot with its misfire policy, then fill the
        wheel to the horizon. Returns the catch-up and skip records to write."""
        emission = Emission()
        # In-flight executions first (even of a deleted job), so every state written below
        # carries them.
        for job_id, state in self._restoring.states.items():
            try:
                self._restore_in_flight(state, now_ms)
            except Exception as exc:  # one job's state never stops its partition's restore
                self._job_failed(job_id, "restore_state", exc, now_ms, emission)
        for job in list(self.jobs.values()):
            try:
                saved = self._restoring.states.get(job.job_id)
                if saved is not None and not belongs_to_a_namesake(saved, job):
                    job.last_scheduled_ms = saved.get("last_scheduled_time")
                    job.emitted_ms = job.last_scheduled_ms
                    job.last_fire_ms = saved.get("last_fire_time")
                emission.extend(self._catch_up(job, now_ms))
                self._materialise(job, now_ms)
            except Exception as exc:
                self._job_failed(job.job_id, "restore", exc, now_ms, emission)
        self._restoring.clear()
        self.serving = True
        return emission

    def _restore_in_flight(self, state: dict[str, Any], now_ms: int) -> None:
        for flight in self.executions.restore(state.get("pending") or []):
            if flight.state == "running" and flight.deadline_ms is not None:
                # Heartbeats sent while nobody owned the partition are still unread: give
                # the worker a full lease from now before calling it dead.
                lease_ms = int(flight.request.get("lease_seconds") or 30) * 1000
                flight.deadline_ms = max(flight.deadline_ms, now_ms + lease_ms + LEASE_GRACE_MS)
            elif flight.state == "queued":
                # Leases taken while nobody owned the partition are still unread, too.
                flight.deadline_ms = self.executions.dispatch_deadline(flight.request, now_ms)
            self._set_deadline(flight)
        for entry in state.get("pending") or []:
            if entry["kind"] == "manual" and entry["timer_id"].startswith("held:"):
                self._held[state["job_id"]] = entry["fire_at"]
        self.workflows.restore(state["job_id"], state.get("pending") or [])

    def _job_failed(
        self, job_id: str, stage: str, exc: Exception, now_ms: int, emission: Emission
    ) -> None:
        """One job's decision raised: it is that job's problem, never its partition's. The job
        leaves the wheel (its definition is kept, so a fixed edit or a restore brings it back),
        and a dead letter says which job and why."""
        log.error(
            "a job's scheduling failed; the job is set aside, its partition goes on",
            extra={"action": "job_failed", "partition": self.partition, "job_id": job_id,
                   "stage": stage, "error": repr(exc)},
        )  # fmt: skip
        job = self.jobs.get(job_id)
        if job is not None:
            self._unschedule(job)
        version = job.version if job is not None else 0
        emission.dead_letters.append(job_dead_letter(job_id, version, stage, exc, now_ms))

    # -- live changes ----------------------------------------------------------------------
    def apply_definition(self, job_id: str, record: dict[str, Any] | None, now_ms: int) -> Emission:
        """A definition changed while serving: delete, pause, resume or edit."""
        old = self.jobs.get(job_id)
        emission = Emission()
        # Checked before anything changes: an invalid edit is refused (and dead-lettered by the
        # service) while the job keeps its old schedule.
        job = None if record is None else entry_from_definition(record)
        if (
            job is not None
            and old is not None
            and (job.version < old.version or (job.version == old.version and job.same_as(old)))
        ):
            # A replay of what we already hold (e.g. read during restore and again live).
            return emission
        if old is not None:
            self._unschedule(old)
        if job is None:
            self.jobs.pop(job_id, None)
            self._held.pop(job_id, None)
            if old is not None:
                # Tombstone the timer state, unless executions are still in flight: their
                # deadlines must survive a change of owner until they finish.
                emission.states[job_id] = self._orphan_state(job_id, now_ms)
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
            emission.extend(self._catch_up(job, now_ms))
            self._materialise(job, now_ms)
        except Exception as exc:
            self._job_failed(job_id, "edit", exc, now_ms, emission)
        # Every change is persisted, so a pause or a resume survives a change of owner.
        emission.states[job_id] = self._state(job, now_ms)
        return emission

    def _unschedule(self, job: JobEntry) -> None:
        if job.handle is not None:
            self.horizon.cancel(job.entry, job.handle)
            job.handle = None
        self.horizon.unpark(job.job_id)
        job.next_ms = None

    # -- the walk --------------------------------------------------------------------------
    def _start_after(self, job: JobEntry) -> int:
        """The instant the job's walk resumes after: its last slot, or its creation (a job's
        first occurrence is its first slot strictly after it was created)."""
        if job.last_scheduled_ms is not None:
            return job.last_scheduled_ms
        if job.one_off:
            return min(job.created_at_ms, job.schedule.next_after(-1) or 0) - 1
        return job.created_at_ms

    def _catch_up(self, job: JobEntry, now_ms: int) -> Emission:
        """Slots missed by more than the grace period, under the job's misfire policy."""
        emission = Emission()
        if not job.enabled:
            return emission
        cutoff = now_ms - self.misfire_grace_ms
        start = self._start_after(job)
        if start >= cutoff:
            return emission
        walk = shared_walk(job.schedule, start, cutoff, job.misfire_policy, job.max_catch_up)
        # Non-firing slots come first in the walk, then the elided middle, then the fired ones.
        for missed in walk:
            if missed.disposition != "fire":
                emission.events.append(
                    skipped_event(job, missed.scheduled_ms, now_ms, missed.reason)
                )
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
            decision = self._overlap(job)
            if decision.action == "skip":
                emission.events.append(
                    skipped_event(job, slot, now_ms, f"overlap:{decision.reason}")
                )
            elif decision.action == "queue":
                self._held[job.job_id] = slot
            else:
                fire_ms = slot + self._jitter(job, slot)
                self._start(job, slot, fire_ms, now_ms, "catch_up", None, emission)
        if walk.last_scheduled_ms is not None:
            job.last_scheduled_ms = walk.last_scheduled_ms
            job.emitted_ms = walk.last_scheduled_ms
        if emission or walk.to_fire:
            emission.states[job.job_id] = self._state(job, now_ms)
        return emission

    def _start(
        self, job: JobEntry, slot: int, fire_ms: int, now_ms: int, trigger: str,
        previous: int | None, emission: Emission,
    ) -> bool:  # fmt: skip
        """Emit attempt 1 of (job, slot), or record the slot as skipped with the reason it
        cannot start: a payload that does not render (that job's problem alone), or a state
        already carrying as many in-flight requests as Kafka allows. Returns whether it fired."""
        try:
            request = self._request(job, slot, fire_ms, now_ms, trigger, previous)
        except Exception as exc:
            log.error(
                "an occurrence's request could not be built; the slot is recorded as skipped",
                extra={"action": "occurrence_rejected", "job_id": job.job_id, "slot": slot,
                       "error": str(exc)},
            )  # fmt: skip
            emission.events.append(skipped_event(job, slot, now_ms, f"invalid_request:{exc}"))
            return False
        if not self.executions.has_room(job.job_id, request["payload"]):
            reason = "overlap" if trigger in ("scheduled", "catch_up") else trigger
            emission.events.append(skipped_event(job, slot, now_ms, f"{reason}:in_flight_budget"))
            return False
        emission.requests.append(request)
        self._set_deadline(self.executions.started(request))
        return True

    def _jitter(self, job: JobEntry, slot_ms: int) -> int:
        if job.jitter_ms <= 0:
            return 0
        return jitter_offset_ms(job.job_id, slot_ms, job.jitter_ms)

    def _materialise(self, job: JobEntry, now_ms: int) -> None:
        """Put the job's next slot in the wheel if it is inside the horizon, else park it."""
        if not job.enabled or job.handle is not None:
            return
        nxt = shared_next_after(job.schedule, self._start_after(job))
        job.next_ms = nxt
        if nxt is None:
            return
        if nxt <= now_ms + self.horizon_ms:
            self._insert(job, nxt)
        else:
            self.horizon.park(job.job_id, nxt)

    def _insert(self, job: JobEntry, slot_ms: int) -> None:
        fire_ms = slot_ms + self._jitter(job, slot_ms)
        job.entry, job.handle = self.horizon.add_slot(job.job_id, slot_ms, fire_ms)

    def start_execution(self, request: dict[str, Any], emission: Emission) -> None:
        """Emit attempt `request` of an execution and hold its dispatch deadline."""
        emission.requests.append(request)
        self._set_deadline(self.executions.started(request))

    def _set_deadline(self, flight: InFlight) -> None:
        """Hold an execution's lease deadline or retry time in the wheel, or its dispatch
        deadline in the dispatch queue."""
        if flight.deadline_ms is None:
            return
        if flight.state == "queued":
            entry = (flight.deadline_ms, flight.request["execution_id"], flight.attempt)
            if self._dispatch and self._dispatch[-1][0] > flight.deadline_ms:
                bisect.insort(self._dispatch, entry)  # a restored one: rare
            else:
                self._dispatch.append(entry)
            return
        self.horizon.add_deadline(
            flight.request["execution_id"], flight.attempt, flight.deadline_ms
        )

    @property
    def wheel(self) -> Horizon:
        """What the wheel holds (its `len` is the wheel-size metric)."""
        return self.horizon

    def _apply(self, decision: Decision, flight: InFlight | None, now_ms: int) -> Emission:
        emission = Emission(
            requests=decision.requests, events=decision.events, dead_letters=decision.dead_letters
        )
        self.workflows.inputs.extend(decision.workflow_inputs)
        if flight is not None:
            self._set_deadline(flight)
        for finished in decision.finished:
            held = self._held.pop(finished.request["job_id"], None)
            job = self.jobs.get(finished.request["job_id"])
            if held is not None and job is not None and job.enabled:
                fire_ms = held + self._jitter(job, held)
                self._start(job, held, fire_ms, now_ms, "scheduled", None, emission)
        for job_id in decision.changed_jobs:
            emission.states[job_id] = self.state_of(job_id, now_ms)
        return emission

    def apply_decision(self, decision: Decision, now_ms: int) -> Emission:
        """What an execution decision made outside an event or a deadline writes."""
        return self._apply(decision, None, now_ms)

    # -- executions ------------------------------------------------------------------------
    def on_execution_event(self, event: dict[str, Any], now_ms: int) -> Emission:
        """A worker's leased/heartbeat/outcome event for an execution this partition owns."""
        decision, flight = self.executions.on_event(event, now_ms)
        return self._apply(decision, flight, now_ms)

    def _refill(self, now_ms: int) -> None:
        for slot, job_id in self.horizon.reached(now_ms + self.horizon_ms):
            job = self.jobs.get(job_id)
            if job is not None and job.handle is None and job.next_ms == slot and job.enabled:
                self._insert(job, slot)

    # -- the tick --------------------------------------------------------------------------
    def tick(self, now_ms: int, *, hold_leases: bool = False) -> Emission:
        """Everything due at `now_ms`, at most `max_batch` occurrences, tenants round-robin.

        `hold_leases`: the partition's worker events are not read up to date, so an expired
        lease may have been renewed by a heartbeat still unread: its expiry waits (up to
        MAX_LEASE_HOLD_MS past the deadline) rather than re-running a live worker's job.

        Nothing one job does raises out of here: a job whose decision fails is set aside
        with a dead letter (`_job_failed`) and the others fire."""
        emission = Emission()
        if not self.serving:
            return emission
        self._refill(now_ms)
        self._dispatch_due(now_ms, hold_leases, emission)
        fire_workflow_timers(self, now_ms, emission)
        for entry, target in self.horizon.due(now_ms):
            try:
                self._due(entry, target, now_ms, hold_leases, emission)
            except Exception as exc:
                self._job_failed(self._job_of(target), "tick", exc, now_ms, emission)
        for job_id, slot in self._ready.serve(self.max_batch, self._tenant_at_cap):
            job = self.jobs.get(job_id)
            if job is None or not job.enabled:
                continue
            try:
                self._fire(job, slot, now_ms, emission)
            except Exception as exc:
                self._job_failed(job_id, "fire", exc, now_ms, emission)
        return emission

    def _dispatch_due(self, now_ms: int, hold_leases: bool, emission: Emission) -> None:
        """Requests whose dispatch deadline passed without a lease (most were leased long ago:
        their entries are stale and pass by)."""
        while self._dispatch and self._dispatch[0][0] <= now_ms:
            deadline, execution_id, attempt = self._dispatch[0]
            if hold_leases and self._lease_held(execution_id, deadline, now_ms):
                return  # its lease may be among the unread events; later ones wait behind it
            self._dispatch.popleft()
            try:
                decision, flight = self.executions.on_deadline(
                    execution_id, attempt, deadline, now_ms
                )
                emission.extend(self._apply(decision, flight, now_ms))
            except Exception as exc:
                self._job_failed(
                    self._job_of(("exec", execution_id)), "tick", exc, now_ms, emission
                )

    def _job_of(self, target: tuple[Any, ...]) -> str:
        if target[0] == "slot":
            return str(target[1])
        flight = self.executions.in_flight.get(target[1])
        return "" if flight is None else str(flight.request["job_id"])

    def _due(
        self, entry: int, target: tuple[Any, ...], now_ms: int, hold_leases: bool,
        emission: Emission,
    ) -> None:  # fmt: skip
        """A wheel entry came due: an execution's deadline, or a job's slot (which then waits
        in the ready queue, within the job's backlog bound)."""
        if target[0] == "exec":
            _, execution_id, attempt, deadline = target
            if hold_leases and self._lease_held(execution_id, deadline, now_ms):
                self.horizon.later(entry, target, now_ms + self.tick_ms)  # looked at next tick
                return
            decision, flight = self.executions.on_deadline(execution_id, attempt, deadline, now_ms)
            emission.extend(self._apply(decision, flight, now_ms))
            return
        _, job_id, slot = target
        job = self.jobs.get(job_id)
        if job is None or job.next_ms != slot:
            return
        job.handle = None
        bound = backlog_bound(job.misfire_policy, job.max_catch_up)
        for dropped in self._ready.push(job.tenant_id, job_id, slot, bound):
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
            emission.states[job_id] = self._state(job, now_ms)
        # The next slot enters the wheel now, so a slow batch never delays the grid.
        job.last_scheduled_ms = slot  # provisional: emitted in this or a later batch
        self._materialise(job, now_ms)

    def _lease_held(self, execution_id: str, deadline_ms: int, now_ms: int) -> bool:
        flight = self.executions.in_flight.get(execution_id)
        return (
            flight is not None
            and flight.state != "retry_wait"  # a retry timer is ours alone: it never waits
            and now_ms - deadline_ms < MAX_LEASE_HOLD_MS
        )

    def _tenant_at_cap(self, tenant: str) -> bool:
        limit = self.tenant_max_in_flight
        return limit > 0 and self.executions.by_tenant[tenant] >= limit

    def _fire(self, job: JobEntry, slot: int, now_ms: int, emission: Emission) -> None:
        """Emit one scheduled occurrence, unless the overlap or misfire policy says otherwise."""
        previous = job.emitted_ms
        if previous is not None and slot <= previous:
            return  # superseded while it waited (a resume moved the watermark past it)
        job.emitted_ms = slot
        decision = self._overlap(job)
        if job.misfire_policy == "skip" and now_ms - slot > self.misfire_grace_ms:
            # It waited (behind its tenant's cap) past the grace: missed, as after an outage.
            emission.events.append(skipped_event(job, slot, now_ms, "misfire:skip:backlog"))
        elif decision.action == "skip":
            emission.events.append(skipped_event(job, slot, now_ms, f"overlap:{decision.reason}"))
        elif decision.action == "queue":
            self._held[job.job_id] = slot
        else:
            fire_ms = slot + self._jitter(job, slot)
            if self._start(job, slot, fire_ms, now_ms, "scheduled", previous, emission):
                job.last_fire_ms = fire_ms
                # The request stands for the job's state until a quieter tick writes it.
                emission.unsaved.append(job.job_id)
                return
        emission.states[job.job_id] = self._state(job, now_ms)

    def settle(self, emission: Emission, now_ms: int) -> None:
        """Before `emission` is written: a job that fired in it and also has a state in it
        gets its state as it stands now (a state built before the fire would claim, by its
        seq, to have seen a request it has not)."""
        if not emission.unsaved:
            return
        unsaved = []
        for job_id in dict.fromkeys(emission.unsaved):
            if job_id in emission.states:
                emission.states[job_id] = self.state_of(job_id, now_ms)
            else:
                unsaved.append(job_id)
        emission.unsaved = unsaved

    def snapshot(self, job_ids: list[str], now_ms: int) -> Emission:
        """The current states of `job_ids` (unsaved jobs written by a quieter tick)."""
        return Emission(states={job_id: self.state_of(job_id, now_ms) for job_id in job_ids})

    def state_of(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        job = self.jobs.get(job_id)
        return self._orphan_state(job_id, now_ms) if job is None else self._state(job, now_ms)

    def _overlap(self, job: JobEntry) -> OverlapDecision:
        """The job's overlap policy on its next slot (the in-flight budget is `_start`'s)."""
        held = 1 if job.job_id in self._held else 0
        running = self.executions.running_count(job.job_id)
        return decide_overlap(job.overlap_policy, running, held)

    @property
    def backlog(self) -> int:
        return len(self._ready)

    # -- commands --------------------------------------------------------------------------
    def command(self, command: dict[str, Any], now_ms: int) -> Emission:
        """Carry out a trigger or backfill. Raises RejectedCommand (for a dead letter) when it
        cannot be: an unknown job, kind or range."""
        if is_workflow_command(command):
            return workflow_command(self, command, now_ms)
        job = self.jobs.get(command["job_id"])
        if job is None:
            raise RejectedCommand(
                command, f"no job {command['job_id']!r} on partition {self.partition}"
            )
        trigger, slots = command_slots(job, command)
        emission = Emission()
        for slot in slots:
            # A trigger is fired at once; a backfill slot too (its period is the slot's own).
            fire_ms = now_ms
            if execution_id_of(job.job_id, job.version, slot) in self.executions.in_flight:
                # That occurrence is still running: its own attempt stands.
                emission.events.append(skipped_event(job, slot, now_ms, f"{trigger}:in_flight"))
                continue
            self._start(job, slot, fire_ms, now_ms, trigger, None, emission)
        emission.states[job.job_id] = self._state(job, now_ms)
        return emission

    # -- records ---------------------------------------------------------------------------
    def _request(
        self, job: JobEntry, slot: int, fire_ms: int, now_ms: int, trigger: str,
        previous: int | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        terms = (self.lease_seconds, self.heartbeat_seconds)
        return request_record(job, slot, fire_ms, now_ms, trigger, previous, terms)

    def _state(self, job: JobEntry, now_ms: int) -> dict[str, Any]:
        held = self._held.get(job.job_id)
        return job_state(job, pending_entries(self.executions, job.job_id, held), now_ms)

    def _orphan_state(self, job_id: str, now_ms: int) -> dict[str, Any] | None:
        pending = self.executions.pending_of(job_id) + self.workflows.pending_of(job_id)
        return orphan_state(job_id, pending, now_ms)
