"""The facts the watchdog folds from its inputs: per job, per slot and per execution.

Every fold here is commutative and idempotent (maxima, minima, unions keyed by identity), so
the facts after a batch of inputs do not depend on the order the topics delivered them in or
on how many times a record was redelivered. That is what makes "same log, same alerts" hold
for inputs reordered or duplicated within the watermark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from sys import intern
from typing import Any, Literal, cast

from tickwheel.core.calendars import BusinessCalendar, calendar_from_record
from tickwheel.core.watchdog.jobs import VERSIONS_KEPT, job_spec
from tickwheel.core.watchdog.steps import WorkflowFacts
from tickwheel.core.watchdog.table import JobFacts, JobTable, SlotFacts
from tickwheel.records import (
    Alert,
    Calendar,
    DeadLetter,
    DeadLetterResolution,
    ExecutionEvent,
    ExecutionRequest,
    JobDefinition,
    WorkflowEvent,
)
from tickwheel.records import WorkflowDefinition as DefinitionRecord  # core's is the parsed one

__all__ = ["Acknowledgement", "ExecutionFacts", "Facts", "JobFacts", "Observed", "SlotFacts"]

# How far along an attempt got; the furthest stage seen wins.
STAGES = {
    "requested": 1,
    "leased": 2,
    "heartbeat": 2,
    "failed": 3,
    "retry_scheduled": 3,
    "cancelled": 3,
    "fenced": 3,
    "succeeded": 4,
}
TAKEN_EVENTS = frozenset(
    {
        "leased",
        "heartbeat",
        "succeeded",
        "failed",
        "retry_scheduled",
        "dead_lettered",
        "cancelled",
        "fenced",
    }
)

InputKind = Literal[
    "definition",
    "request",
    "event",
    "dead_letter",
    "dead_letter_resolution",
    "command",
    "calendar",
    "workflow_definition",
    "workflow_event",
]


@dataclass(frozen=True, slots=True)
class Observed:
    """One input record: a definition (`record` None is a tombstone), an execution request,
    an execution event, a dead letter or a command to the watchdog (an acknowledgement),
    decoded."""

    kind: InputKind
    key: str
    record: Mapping[str, Any] | None
    # The partition it was read from: definitions and requests are co-partitioned by job id,
    # so this is the timer partition that owns the job (None: not known, e.g. a test).
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """`tickwheel alerts ack`: a person says they are on it (`by`, `note`), at `at`."""

    command_id: str
    incident_id: str
    by: str
    note: str
    at: int


@dataclass(slots=True)
class ExecutionFacts:
    """One execution across its attempts: is it waiting for a worker, is it dead-lettered."""

    job_id: str
    requested_attempt: int = 0
    requested_at_ms: int | None = None
    priority: str | None = None
    tenant_id: str | None = None
    job_type: str | None = None
    taken_attempt: int = 0
    dead_attempt: int = 0
    dead_at_ms: int | None = None
    succeeded_attempt: int = 0
    # When an operator retried or discarded its dead letter (executions.dlq.resolutions;
    # a retry runs as a new execution, so nothing of this one would ever clear it).
    resolved_at_ms: int | None = None
    last_seen_ms: int = 0

    @property
    def ready(self) -> bool:
        return self.requested_at_ms is not None and self.taken_attempt < self.requested_attempt

    @property
    def dead_unresolved(self) -> bool:
        if self.dead_at_ms is None:
            return False
        if self.resolved_at_ms is not None and self.resolved_at_ms >= self.dead_at_ms:
            return False
        return max(self.requested_attempt, self.succeeded_attempt) <= self.dead_attempt


# Settled executions are kept in generations of this much event time each (decision 0133).
SETTLED_GENERATION_MS = 300_000


@dataclass(slots=True)
class Facts:
    jobs: JobTable = field(default_factory=JobTable)
    # The executions that can raise something: waiting for a worker, or dead-lettered and not
    # resolved (and, until the next evaluation, whatever the last batch touched).
    executions: dict[str, ExecutionFacts] = field(default_factory=dict)
    # Every other execution, settled: only its highest attempt, so that a record about it
    # read late (another topic read behind) folds as before — an attempt already seen changes
    # nothing, a newer one brings it back. In generations by when they settled, each dropped
    # whole `settled_after_ms` after (decision 0133): (generation, execution id → attempt).
    settled: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    # The newest time a settled execution was taken, per priority (`parents`' live worker).
    taken_ms: dict[str, int] = field(default_factory=dict)
    # Acknowledgements not yet applied, by command id (applied once the watermark passes them).
    acks: dict[str, Acknowledgement] = field(default_factory=dict)
    # The newest request time seen per timer partition: how far each one has fired.
    partition_fired_ms: dict[int, int] = field(default_factory=dict)

    # The holiday calendars known, by name (the `calendars` topic): the watchdog compiles a
    # job that follows one with it, as the timer does, and again when it changes.
    calendars: dict[str, BusinessCalendar] = field(default_factory=dict)
    # The definition record of each job that follows a calendar, to compile it again then.
    calendar_sources: dict[str, JobDefinition] = field(default_factory=dict)
    # Workflow definitions' expected step durations, and the steps of running instances.
    workflows: WorkflowFacts = field(default_factory=WorkflowFacts)

    def job(self, job_id: str) -> JobFacts:
        return JobFacts(self.jobs, job_id, self.jobs.row(job_id))

    def execution(self, execution_id: str, job_id: str) -> ExecutionFacts:
        facts = self.executions.get(execution_id)
        if facts is None:
            facts = self.executions[execution_id] = ExecutionFacts(job_id)
        return facts

    def _live(
        self, execution_id: str, job_id: str, attempt: int, dead: bool = False
    ) -> ExecutionFacts | None:
        """The execution's facts to fold a record of `attempt` into; None for a settled one
        that the record cannot change: an attempt older than the one it settled at, or that
        one unless the record is a dead letter (which makes it count again, as before)."""
        if execution_id in self.executions or not self.settled:
            return self.execution(execution_id, job_id)
        for _, generation in self.settled:
            settled_at = generation.get(execution_id)
            if settled_at is None:
                continue
            if attempt < settled_at or (attempt == settled_at and not dead):
                return None
            del generation[execution_id]
            facts = self.executions[execution_id] = ExecutionFacts(job_id, taken_attempt=settled_at)
            return facts
        return self.execution(execution_id, job_id)

    def is_settled(self, execution_id: str) -> bool:
        return any(execution_id in generation for _, generation in self.settled)

    def settle(self, watermark: int, settled_after_ms: int) -> None:
        """After an evaluation: executions that can raise nothing become settled (their
        attempt kept), and generations settled more than `settled_after_ms` ago are dropped."""
        moving = [
            (execution_id, execution)
            for execution_id, execution in self.executions.items()
            if not execution.ready and not execution.dead_unresolved
        ]
        if moving:
            generation = watermark // SETTLED_GENERATION_MS
            if not self.settled or self.settled[-1][0] != generation:
                self.settled.append((generation, {}))
            into = self.settled[-1][1]
            horizon = watermark - settled_after_ms
            for execution_id, execution in moving:
                del self.executions[execution_id]
                if execution.last_seen_ms < horizon:
                    continue  # nothing seen of it for that long: forgotten, as before
                into[execution_id] = max(
                    execution.requested_attempt,
                    execution.taken_attempt,
                    execution.dead_attempt,
                    execution.succeeded_attempt,
                )
                if execution.taken_attempt:
                    priority = execution.priority or "normal"
                    taken = self.taken_ms.get(priority, execution.last_seen_ms)
                    self.taken_ms[priority] = max(taken, execution.last_seen_ms)
        oldest = (watermark - settled_after_ms) // SETTLED_GENERATION_MS
        while self.settled and self.settled[0][0] < oldest:
            del self.settled[0]

    def apply(self, observed: Observed) -> None:
        """Fold one input in; a record that is not what its kind says is ignored (the timer
        and the history sink dead-letter such records; the watchdog must not crash on them)."""
        try:
            if observed.kind == "definition":
                self._definition(observed.key, cast("JobDefinition | None", observed.record))
                if observed.partition is not None:
                    self.job(observed.key).partition = observed.partition
            elif observed.kind == "calendar":
                self._calendar(observed.key, cast("Calendar | None", observed.record))
            elif observed.record is None:
                return
            # The kind names the record the reader decoded (`decode_as` by the topic's schema).
            elif observed.kind == "request":
                self._request(cast(ExecutionRequest, observed.record))
                if observed.partition is not None:
                    at = int(observed.record["requested_at"])
                    fired = self.partition_fired_ms.get(observed.partition, at)
                    self.partition_fired_ms[observed.partition] = max(fired, at)
            elif observed.kind == "event":
                self._event(cast(ExecutionEvent, observed.record))
            elif observed.kind == "dead_letter":
                self._dead_letter(cast(DeadLetter, observed.record))
            elif observed.kind == "dead_letter_resolution":
                self._resolution(cast(DeadLetterResolution, observed.record))
            elif observed.kind == "command":
                self._command(cast(Alert, observed.record))
            elif observed.kind == "workflow_definition":
                self.workflows.definition(cast(DefinitionRecord, observed.record))
            elif observed.kind == "workflow_event":
                self.workflows.event(cast(WorkflowEvent, observed.record))
        except (KeyError, TypeError, ValueError):
            return

    def _definition(self, job_id: str, record: JobDefinition | None) -> None:
        facts = self.job(job_id)
        table = self.jobs
        table.touch(job_id)  # an older version too: it can move when the job was resumed
        if record is None:
            # A delete: whatever the job owed ends with it; a re-create starts afresh.
            table.history.pop(job_id, None)
            table.set_spec(job_id, None)
            self.calendar_sources.pop(job_id, None)
            facts.deleted = True
            return
        spec = job_spec(job_id, record, self.calendars)
        if spec is None:
            return
        current = facts.spec
        if facts.deleted and current is None and spec.version >= 1:
            facts.deleted = False
        kept = table.history.get(job_id)
        if kept is None and current is not None and current.version != spec.version:
            kept = table.history[job_id] = {
                current.version: (current.enabled, current.updated_at_ms)
            }
        if kept is not None:
            kept[spec.version] = (spec.enabled, spec.updated_at_ms)
            if len(kept) > VERSIONS_KEPT:
                del kept[min(kept)]
        if current is None or spec.version >= current.version:
            table.set_spec(job_id, spec)
            profile = spec.profile
            if (profile.min_run_ms is not None or profile.max_run_ms is not None) and (
                facts.last_run is None
            ):
                # Its newest run was pruned while it declared no run time: judged by it
                # all the same, from the compact columns (decision 0134).
                facts.last_run = facts.newest_run()
            if spec.profile.calendar is not None:
                self.calendar_sources[job_id] = record
            else:
                self.calendar_sources.pop(job_id, None)

    def _calendar(self, name: str, record: Calendar | None) -> None:
        """A calendar set (or, as a tombstone, removed): each job following it is compiled
        again from its own definition, as the timer does; a record that is not a calendar
        (its name differing from its key, say) changes nothing (ValueError, ignored)."""
        calendar = None if record is None else calendar_from_record(record)
        if calendar is not None and calendar.name != name:
            raise ValueError(f"the calendar record keyed {name!r} is named {calendar.name!r}")
        if self.calendars.get(name) == calendar:
            return
        if calendar is None:
            del self.calendars[name]
        else:
            self.calendars[name] = calendar
        for job_id, source in sorted(self.calendar_sources.items()):
            if source.get("calendar") != name:
                continue
            spec = job_spec(job_id, source, self.calendars)
            if spec is not None:
                self.jobs.set_spec(job_id, spec)

    def _request(self, request: ExecutionRequest) -> None:
        job_id, attempt = str(request["job_id"]), int(request["attempt"])
        slot = int(request["scheduled_time"])
        self.job(job_id).slot(slot).see(attempt, STAGES["requested"], None)
        requested_at = int(request["requested_at"])
        found = self._live(str(request["execution_id"]), job_id, attempt)
        if found is None:
            return  # a settled execution's request read late: it waits for nothing
        execution = found
        if attempt > execution.requested_attempt:
            execution.requested_attempt = attempt
            execution.requested_at_ms = requested_at
        elif attempt == execution.requested_attempt and execution.requested_at_ms is not None:
            execution.requested_at_ms = min(execution.requested_at_ms, requested_at)
        # Interned: a few distinct values, held by every execution (decision 0106).
        execution.priority = intern(str(request["priority"]))
        execution.tenant_id = intern(str(request["tenant_id"]))
        execution.job_type = intern(str(request["job_type"]))
        execution.last_seen_ms = max(execution.last_seen_ms, requested_at)

    def _event(self, event: ExecutionEvent) -> None:
        kind = str(event["event_type"])
        job_id, attempt = str(event["job_id"]), int(event["attempt"])
        at, slot = int(event["event_time"]), int(event["scheduled_time"])
        job = self.job(job_id)
        slot_facts = job.slot(slot)
        if kind == "skipped":
            slot_facts.skipped = True
        elif kind == "dead_lettered":
            slot_facts.dead = True
        elif kind in STAGES:
            worker = event.get("worker_id")
            slot_facts.see(
                attempt, STAGES[kind], intern(worker) if isinstance(worker, str) else None
            )
        if kind == "succeeded":
            job.succeeded(at, slot)
        if kind in ("leased", "succeeded"):
            slot_facts.ran(
                attempt, at if kind == "leased" else None, at if kind == "succeeded" else None
            )
            run = slot_facts
            if run.leased_at is not None and run.succeeded_at is not None:
                known = (slot, run.run_attempt, run.leased_at, run.succeeded_at)
                job.last_run = known if job.last_run is None else max(job.last_run, known)
                job.ran(slot, run.succeeded_at - run.leased_at)
        if kind not in TAKEN_EVENTS:
            return
        # A dead letter of the attempt it settled at still counts; anything else of an
        # attempt already settled changes nothing.
        found = self._live(
            str(event["execution_id"]), job_id, attempt, dead=kind == "dead_lettered"
        )
        if found is None:
            return
        execution = found
        execution.taken_attempt = max(execution.taken_attempt, attempt)
        execution.tenant_id = execution.tenant_id or intern(str(event["tenant_id"]))
        execution.job_type = execution.job_type or intern(str(event["job_type"]))
        execution.last_seen_ms = max(execution.last_seen_ms, at)
        if kind == "succeeded":
            execution.succeeded_attempt = max(execution.succeeded_attempt, attempt)
        elif kind == "dead_lettered":
            self._dead(execution, attempt, at)

    def _dead_letter(self, dead_letter: DeadLetter) -> None:
        execution_id, job_id = dead_letter.get("execution_id"), dead_letter.get("job_id")
        if execution_id is None or job_id is None:
            return  # a record nobody could read: not an execution's dead letter
        attempt = int(dead_letter.get("attempt") or 1)
        execution = self._live(str(execution_id), str(job_id), attempt, dead=True)
        if execution is None:
            return
        at = int(dead_letter["event_time"])
        self._dead(execution, attempt, at)
        execution.last_seen_ms = max(execution.last_seen_ms, at)

    def _resolution(self, resolution: DeadLetterResolution) -> None:
        """An operator's retry or discard of a dead letter: its execution stops counting as
        dead-lettered (the newest resolution wins, whatever order they are read in)."""
        execution_id, job_id = resolution.get("execution_id"), resolution.get("job_id")
        if execution_id is None:
            return  # the letter of a record nobody could read: no execution to clear
        known = self.executions.get(str(execution_id))
        if known is None and (job_id is None or self.is_settled(str(execution_id))):
            return  # nobody's, or settled already: a resolution only ever clears
        execution = known or self.execution(str(execution_id), str(job_id))
        at = int(resolution["event_time"])
        execution.resolved_at_ms = max(execution.resolved_at_ms or at, at)
        execution.last_seen_ms = max(execution.last_seen_ms, at)

    def _command(self, command: Alert) -> None:
        if command.get("kind") != "acknowledge":
            return
        details = json.loads(command.get("details") or "{}")
        ack = Acknowledgement(
            command_id=str(command["alert_id"]),
            incident_id=str(details["incident_id"]),
            by=str(details.get("by") or "unknown"),
            note=str(command.get("message") or ""),
            at=int(command["event_time"]),
        )
        self.acks[ack.command_id] = ack

    @staticmethod
    def _dead(execution: ExecutionFacts, attempt: int, at: int) -> None:
        execution.dead_attempt = max(execution.dead_attempt, attempt)
        execution.dead_at_ms = at if execution.dead_at_ms is None else min(execution.dead_at_ms, at)
