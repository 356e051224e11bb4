"""Timer states (the `TimerState` records of `timers.state`): the ones a restore reads back,
rebuilt where needed from the requests they do not cover yet (decision 0008), and the ones
a partition writes. Pure: every instant is an argument."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickwheel.core.timer.executions import ExecutionTracker
from tickwheel.core.timer.jobs import (
    JobEntry,
    request_of_a_predecessor,
    state_of_a_predecessor,
)
from tickwheel.records import ExecutionRequest, PendingTimer


class RestoringStates:
    """The states a restore has read, per job, the jobs whose state was deleted, and the
    jobs whose definitions went from paused to enabled in what it read."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}
        self.tombstoned: set[str] = set()  # states deleted: read during a restore only
        # Job id -> the latest instant a definition read by the restore resumed it (enabled
        # after a disabled version): slots before it fell while it was paused, and are not
        # owed, as when the live loop reads the resume (decision 0159).
        self.resumed: dict[str, int] = {}
        # Job id -> the spans it was enabled in that a pause read by the restore closed, in
        # order: (the resume that opened it, or None: from the job's state on; the pause's
        # instant; the pause's version). Their slots were owed, as an outage's (decision 0176).
        self.closed_spans: dict[str, list[tuple[int | None, int, int]]] = {}

    def definition_read(self, job_id: str, old: JobEntry | None, new: JobEntry | None) -> None:
        """A definition record the restore read, after `old` (None: a tombstone as `new`)."""
        if new is None:
            self.resumed.pop(job_id, None)  # a job created again later is a new job
            self.closed_spans.pop(job_id, None)
        elif old is not None and not old.enabled and new.enabled:
            self.resumed[job_id] = new.updated_at_ms
        elif old is not None and old.enabled and not new.enabled:
            span = (self.resumed.get(job_id), new.updated_at_ms, new.version)
            self.closed_spans.setdefault(job_id, []).append(span)

    def load(self, job_id: str, state: dict[str, Any] | None) -> None:
        if state is None:
            self.states.pop(job_id, None)
            self.tombstoned.add(job_id)
        else:
            self.states[job_id] = state
            self.tombstoned.discard(job_id)

    def apply_request(self, request: ExecutionRequest, seq: int, job: JobEntry | None) -> bool:
        """A request from the request topics' tail, written by transaction `seq`, for `job` (its
        current definition, if any). Applied to its job's state unless that state was written
        by the same or a later transaction (it has seen the request already). Returns whether it
        was applied (the job's state is then still to be written)."""
        job_id = request["job_id"]
        state = self.states.get(job_id)
        if state is not None and int(state.get("seq") or 0) >= seq:
            return False
        if job is None and state is None and job_id in self.tombstoned:
            return False  # it finished and its job was deleted: the tombstone says so
        if job is not None and request_of_a_predecessor(request, job):
            return False
        if state is None or (job is not None and state_of_a_predecessor(state, job)):
            # This job's first state (a job never saved, or deleted with this request in
            # flight before anyone wrote it): built from its requests. A predecessor's in-flight
            # executions are kept; its watermark is not this job's.
            pending = [] if state is None else list(state.get("pending") or [])
            state = {
                "job_id": job_id,
                "job_version": request["job_version"],
                "last_scheduled_time": None,
                "last_fire_time": None,
                "updated_at": request["requested_at"],
                "pending": pending,
                "seq": 0,
            }
            self.states[job_id] = state
        if request["trigger"] in ("scheduled", "catch_up"):
            slot = request["scheduled_time"]
            if state.get("last_scheduled_time") is None or state["last_scheduled_time"] < slot:
                state["last_scheduled_time"] = slot
                state["last_fire_time"] = request["fire_time"]
        execution_id = request["execution_id"]
        state["pending"] = [
            p for p in state.get("pending") or [] if p["execution_id"] != execution_id
        ]
        state["pending"].append(ExecutionTracker.queued_entry(request))
        return True

    def walk_on_from_the_resume(self, job: JobEntry) -> bool:
        """A job the restore read paused, then resumed (while nobody served its partition, or
        before this restore read it live): its walk goes on from the resume instant, as when the
        live loop reads a resume (`apply_definition`); the slots of the pause are not owed
        (decisions 0004, 0159). Returns whether its watermark moved."""
        resumed_ms = self.resumed.get(job.job_id)
        saved = self.states.get(job.job_id)
        if (
            resumed_ms is None
            and saved is not None
            and says_paused(saved)
            and int(saved.get("job_version") or 0) < job.version
        ):
            # Paused when its state was written, enabled now, and the resume itself not read
            # (compacted away): resumed by this version at the latest (decision 0176).
            resumed_ms = job.updated_at_ms
        if resumed_ms is None or not job.enabled:
            return False
        if job.last_scheduled_ms is not None and job.last_scheduled_ms >= resumed_ms:
            return False  # a state written after the resume covers it already
        job.last_scheduled_ms = job.emitted_ms = resumed_ms
        return True

    def clear(self) -> None:
        self.states.clear()
        self.tombstoned.clear()
        self.resumed.clear()
        self.closed_spans.clear()


def pending_entries(
    executions: ExecutionTracker, job_id: str, held_slot: int | None
) -> list[dict[str, Any]]:
    """The job's in-flight executions, and its `queue_one` held occurrence, as `pending`."""
    pending = executions.pending_of(job_id)
    if held_slot is not None:
        # queue_one: the occurrence held back until the running one finishes.
        pending.append(
            {
                "timer_id": f"held:{held_slot}",
                "kind": "manual",
                "fire_at": held_slot,
                "execution_id": None,
                "attempt": 0,
                "data": None,
            }
        )
    return pending


# A paused job's state says so in a `pending` entry (TimerState has no `enabled`, and its
# schema stays as it is): a restore that finds the resumed definition alone, the paused one
# compacted away, still knows the slots since the state were the pause's (decision 0176).
# Every reader of `pending` passes over a `manual` entry it does not know.
PAUSED_TIMER_ID = "paused"


def paused_entry(job: JobEntry) -> PendingTimer:
    return {
        "timer_id": PAUSED_TIMER_ID,
        "kind": "manual",
        "fire_at": job.updated_at_ms,
        "execution_id": None,
        "attempt": 0,
        "data": None,
        "request": None,
    }


def says_paused(state: Mapping[str, Any]) -> bool:
    """Whether a state was written while its job was paused (by this code or later)."""
    return any(
        entry.get("timer_id") == PAUSED_TIMER_ID and entry.get("kind") == "manual"
        for entry in state.get("pending") or ()
    )


def job_state(job: JobEntry, pending: list[dict[str, Any]], now_ms: int) -> dict[str, Any]:
    if not job.enabled:
        pending = [*pending, {**paused_entry(job)}]
    return {
        "job_id": job.job_id,
        "job_version": job.version,
        "last_scheduled_time": job.emitted_ms,
        "last_fire_time": job.last_fire_ms,
        "next_scheduled_time": job.next_ms,
        "updated_at": now_ms,
        "pending": pending,
        "input_offsets": {},
    }


def orphan_state(job_id: str, pending: list[dict[str, Any]], now_ms: int) -> dict[str, Any] | None:
    """The state of a deleted job: a tombstone once nothing of it is in flight."""
    if not pending:
        return None
    return {
        "job_id": job_id,
        "job_version": 0,
        "last_scheduled_time": None,
        "last_fire_time": None,
        "next_scheduled_time": None,
        "updated_at": now_ms,
        "pending": pending,
        "input_offsets": {},
    }
