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
from typing import Any, Literal

from tickwheel.core.watchdog.jobs import VERSIONS_KEPT, JobSpec, job_spec

# How far along an attempt got; the furthest stage seen wins.
STAGES = {"requested": 1, "leased": 2, "heartbeat": 2, "failed": 3, "retry_scheduled": 3,
          "cancelled": 3, "fenced": 3, "succeeded": 4}  # fmt: skip
TAKEN_EVENTS = frozenset({"leased", "heartbeat", "succeeded", "failed", "retry_scheduled",
                          "dead_lettered", "cancelled", "fenced"})  # fmt: skip

InputKind = Literal["definition", "request", "event", "dead_letter", "command"]


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
class SlotFacts:
    """What happened to one occurrence (job, scheduled time), over all its attempts."""

    attempt: int = 0
    stage: int = 0  # STAGES of the highest attempt seen
    dead: bool = False
    skipped: bool = False
    worker: str | None = None
    # The run of the highest attempt that was leased: when it was leased, and when it
    # succeeded (earliest of each, so a redelivery or another order gives the same).
    run_attempt: int = 0
    leased_at: int | None = None
    succeeded_at: int | None = None

    def ran(self, attempt: int, leased_at: int | None, succeeded_at: int | None) -> None:
        if attempt > self.run_attempt:
            self.run_attempt, self.leased_at, self.succeeded_at = attempt, None, None
        if attempt == self.run_attempt:
            if leased_at is not None:
                self.leased_at = min(leased_at, self.leased_at or leased_at)
            if succeeded_at is not None:
                self.succeeded_at = min(succeeded_at, self.succeeded_at or succeeded_at)

    def see(self, attempt: int, stage: int, worker: str | None) -> None:
        if attempt > self.attempt:
            self.attempt, self.stage, self.worker = attempt, stage, worker
        elif attempt == self.attempt and stage > self.stage:
            self.stage = stage
            self.worker = worker or self.worker
        elif attempt == self.attempt and stage == self.stage and worker is not None:
            self.worker = min(worker, self.worker or worker)  # any order gives the same one


@dataclass(slots=True)
class JobFacts:
    versions: dict[int, JobSpec] = field(default_factory=dict)
    deleted: bool = False
    last_success_ms: int | None = None
    last_success_slot: int | None = None
    slots: dict[int, SlotFacts] = field(default_factory=dict)
    # The newest slot whose run's length is known: (slot, attempt, leased at, succeeded at).
    last_run: tuple[int, int, int, int] | None = None
    partition: int | None = None  # the timer partition owning the job, when known

    @property
    def spec(self) -> JobSpec | None:
        return self.versions[max(self.versions)] if self.versions else None

    def resumed_at_ms(self) -> int | None:
        """When the current run of enabled versions began after a disabled one, if known."""
        if not self.versions:
            return None
        version = max(self.versions)
        if not self.versions[version].enabled:
            return None
        while version - 1 in self.versions and self.versions[version - 1].enabled:
            version -= 1
        before = self.versions.get(version - 1)
        return self.versions[version].updated_at_ms if before is not None else None

    def disabled_since_ms(self) -> int | None:
        """When the current run of disabled versions began (as far as the versions kept
        tell), or None while the job is enabled."""
        if not self.versions:
            return None
        version = max(self.versions)
        if self.versions[version].enabled:
            return None
        while version - 1 in self.versions and not self.versions[version - 1].enabled:
            version -= 1
        return self.versions[version].updated_at_ms


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
    last_seen_ms: int = 0

    @property
    def ready(self) -> bool:
        return self.requested_at_ms is not None and self.taken_attempt < self.requested_attempt

    @property
    def dead_unresolved(self) -> bool:
        return self.dead_at_ms is not None and (
            max(self.requested_attempt, self.succeeded_attempt) <= self.dead_attempt
        )


@dataclass(slots=True)
class Facts:
    jobs: dict[str, JobFacts] = field(default_factory=dict)
    executions: dict[str, ExecutionFacts] = field(default_factory=dict)
    # Acknowledgements not yet applied, by command id (applied once the watermark passes them).
    acks: dict[str, Acknowledgement] = field(default_factory=dict)
    # The newest request time seen per timer partition: how far each one has fired.
    partition_fired_ms: dict[int, int] = field(default_factory=dict)

    def job(self, job_id: str) -> JobFacts:
        facts = self.jobs.get(job_id)
        if facts is None:
            facts = self.jobs[job_id] = JobFacts()
        return facts

    def execution(self, execution_id: str, job_id: str) -> ExecutionFacts:
        facts = self.executions.get(execution_id)
        if facts is None:
            facts = self.executions[execution_id] = ExecutionFacts(job_id)
        return facts

    def apply(self, observed: Observed) -> None:
        """Fold one input in; a record that is not what its kind says is ignored (the timer
        and the history sink dead-letter such records; the watchdog must not crash on them)."""
        try:
            if observed.kind == "definition":
                self._definition(observed.key, observed.record)
                if observed.partition is not None:
                    self.job(observed.key).partition = observed.partition
            elif observed.record is None:
                return
            elif observed.kind == "request":
                self._request(observed.record)
                if observed.partition is not None:
                    at = int(observed.record["requested_at"])
                    fired = self.partition_fired_ms.get(observed.partition, at)
                    self.partition_fired_ms[observed.partition] = max(fired, at)
            elif observed.kind == "event":
                self._event(observed.record)
            elif observed.kind == "dead_letter":
                self._dead_letter(observed.record)
            elif observed.kind == "command":
                self._command(observed.record)
        except (KeyError, TypeError, ValueError):
            return

    def _definition(self, job_id: str, record: Mapping[str, Any] | None) -> None:
        facts = self.job(job_id)
        if record is None:
            # A delete: whatever the job owed ends with it; a re-create starts afresh.
            facts.versions.clear()
            facts.deleted = True
            return
        spec = job_spec(job_id, record)
        if spec is None:
            return
        if facts.deleted and facts.versions == {} and spec.version >= 1:
            facts.deleted = False
        facts.versions[spec.version] = spec
        if len(facts.versions) > VERSIONS_KEPT:
            del facts.versions[min(facts.versions)]

    def _request(self, request: Mapping[str, Any]) -> None:
        job_id, attempt = str(request["job_id"]), int(request["attempt"])
        slot = int(request["scheduled_time"])
        self.job(job_id).slots.setdefault(slot, SlotFacts()).see(attempt, STAGES["requested"], None)
        execution = self.execution(str(request["execution_id"]), job_id)
        requested_at = int(request["requested_at"])
        if attempt > execution.requested_attempt:
            execution.requested_attempt = attempt
            execution.requested_at_ms = requested_at
        elif attempt == execution.requested_attempt and execution.requested_at_ms is not None:
            execution.requested_at_ms = min(execution.requested_at_ms, requested_at)
        execution.priority = str(request["priority"])
        execution.tenant_id = str(request["tenant_id"])
        execution.job_type = str(request["job_type"])
        execution.last_seen_ms = max(execution.last_seen_ms, requested_at)

    def _event(self, event: Mapping[str, Any]) -> None:
        kind = str(event["event_type"])
        job_id, attempt = str(event["job_id"]), int(event["attempt"])
        at, slot = int(event["event_time"]), int(event["scheduled_time"])
        job = self.job(job_id)
        slot_facts = job.slots.setdefault(slot, SlotFacts())
        if kind == "skipped":
            slot_facts.skipped = True
        elif kind == "dead_lettered":
            slot_facts.dead = True
        elif kind in STAGES:
            slot_facts.see(attempt, STAGES[kind], event.get("worker_id"))
        if kind in ("leased", "succeeded"):
            slot_facts.ran(attempt, at if kind == "leased" else None,
                           at if kind == "succeeded" else None)  # fmt: skip
            run = slot_facts
            if run.leased_at is not None and run.succeeded_at is not None:
                known = (slot, run.run_attempt, run.leased_at, run.succeeded_at)
                job.last_run = known if job.last_run is None else max(job.last_run, known)
        if kind == "succeeded" and (job.last_success_ms is None or at > job.last_success_ms):
            job.last_success_ms, job.last_success_slot = at, slot
        elif kind == "succeeded" and at == job.last_success_ms:
            job.last_success_slot = max(slot, job.last_success_slot or slot)
        if kind not in TAKEN_EVENTS:
            return
        execution = self.execution(str(event["execution_id"]), job_id)
        execution.taken_attempt = max(execution.taken_attempt, attempt)
        execution.tenant_id = execution.tenant_id or str(event["tenant_id"])
        execution.job_type = execution.job_type or str(event["job_type"])
        execution.last_seen_ms = max(execution.last_seen_ms, at)
        if kind == "succeeded":
            execution.succeeded_attempt = max(execution.succeeded_attempt, attempt)
        elif kind == "dead_lettered":
            self._dead(execution, attempt, at)

    def _dead_letter(self, dead_letter: Mapping[str, Any]) -> None:
        execution_id, job_id = dead_letter.get("execution_id"), dead_letter.get("job_id")
        if execution_id is None or job_id is None:
            return  # a record nobody could read: not an execution's dead letter
        execution = self.execution(str(execution_id), str(job_id))
        at = int(dead_letter["event_time"])
        self._dead(execution, int(dead_letter.get("attempt") or 1), at)
        execution.last_seen_ms = max(execution.last_seen_ms, at)

    def _command(self, command: Mapping[str, Any]) -> None:
        if command.get("kind") != "acknowledge":
            return
        details = json.loads(command.get("details") or "{}")
        ack = Acknowledgement(
            command_id=str(command["alert_id"]), incident_id=str(details["incident_id"]),
            by=str(details.get("by") or "unknown"), note=str(command.get("message") or ""),
            at=int(command["event_time"]),
        )  # fmt: skip
        self.acks[ack.command_id] = ack

    @staticmethod
    def _dead(execution: ExecutionFacts, attempt: int, at: int) -> None:
        execution.dead_attempt = max(execution.dead_attempt, attempt)
        execution.dead_at_ms = at if execution.dead_at_ms is None else min(execution.dead_at_ms, at)
