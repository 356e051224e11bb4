"""The Avro records as Python types — GENERATED, do not edit.

Regenerate with `python -m tickwheel.adapters.avro.records_gen` after adding a schema version;
`tests/unit/test_records_drift.py` fails while this file and `schemas/` disagree. One TypedDict
per record (its highest version: the shape `decode` returns), enums as `Literal`s. Pure types:
the core may import them (decision 0080).
"""

from __future__ import annotations

from typing import Literal, TypedDict

AlertSeverity = Literal["info", "warning", "critical"]


class Alert(TypedDict):
    """An alert raised by the watchdog."""

    # Unique, deterministic alert id.
    alert_id: str
    # When the alert was raised: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    event_time: int
    # Alert kind, e.g. job_absent, broken_chain, dlq_age, oldest_ready_age, workflow_stuck.
    kind: str
    # Alert severity.
    severity: AlertSeverity
    # Job concerned, if any.
    job_id: str | None
    # Tenant concerned, if any.
    tenant_id: str | None
    # Human-readable message.
    message: str
    # Extra data as JSON text.
    details: str | None


class DeadLetter(TypedDict):
    """A dead letter: an execution that exhausted its attempts or failed permanently
    (executions.dlq), or a record that could not be decoded."""

    # Unique, deterministic id.
    dead_letter_id: str
    # When the record was dead-lettered: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    event_time: int
    # Why, e.g. max_attempts_exhausted, permanent_error, undecodable.
    reason: str
    # Topic of the record that led here.
    source_topic: str
    # Partition of that record.
    source_partition: int
    # Offset of that record.
    source_offset: int
    # The execution, if known.
    execution_id: str | None
    # The job, if known.
    job_id: str | None
    # The last attempt, if known.
    attempt: int | None
    # Last error message.
    error: str | None
    # The execution's payload as JSON text, if known.
    payload: str | None
    # The undecodable record's bytes, verbatim.
    raw_value: bytes | None


ExecutionControlKind = Literal["cancel"]


class ExecutionControl(TypedDict):
    """A control instruction for one execution, broadcast to every worker: the value of
    executions.control (key = execution_id, one partition)."""

    # Unique id of this control record.
    control_id: str
    # The execution it applies to (every attempt of it).
    execution_id: str
    # The execution's job, when the sender knows it; null when absent.
    job_id: str | None
    # cancel: a queued attempt never starts; a running one sees its cancellation signal and ends
    # as cancelled.
    kind: ExecutionControlKind
    # When the control was issued: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    requested_at: int
    # Why, in the requester's words; null when absent.
    reason: str | None


ExecutionEventType = Literal[
    "requested",
    "skipped",
    "leased",
    "heartbeat",
    "succeeded",
    "failed",
    "retry_scheduled",
    "dead_lettered",
    "fenced",
    "cancelled",
]


class ExecutionEvent(TypedDict):
    """One event of an execution's life: the value of executions.events (key = job_id) and one row
    of the history table execution_events (DESIGN 13)."""

    # Unique, deterministic event id (the history sink deduplicates on it).
    event_id: str
    # When the event happened: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    event_time: int
    # Kind of execution event.
    event_type: ExecutionEventType
    # The job.
    job_id: str
    # Job type.
    job_type: str
    # Owning tenant.
    tenant_id: str
    # The execution (stable across attempts).
    execution_id: str
    # Attempt number the event belongs to.
    attempt: int
    # The occurrence's slot: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    scheduled_time: int
    # The slot plus jitter: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020); null when absent.
    fire_time: int | None
    # Worker that leased or reported, if any.
    worker_id: str | None
    # Deadline of the lease this event grants or extends: UTC instant as epoch milliseconds
    # (plain long, no logicalType: see docs/decisions/0020); null when absent.
    lease_deadline: int | None
    # Error message of a failure.
    error: str | None
    # Error classification, e.g. retryable or permanent.
    error_kind: str | None
    # Why, e.g. why an occurrence was skipped or an outcome fenced.
    reason: str | None
    # Extra data as JSON text.
    details: str | None


Priority = Literal["high", "normal", "low"]


ExecutionTrigger = Literal["scheduled", "manual", "backfill", "retry", "lease_expired", "catch_up"]


class ExecutionRequest(TypedDict):
    """A request to run one attempt of an execution: the value of executions.<priority> (key =
    job_id)."""

    # Deterministic id of the occurrence; identical on every attempt; the handler's idempotency
    # key.
    execution_id: str
    # The job.
    job_id: str
    # Definition version the occurrence was computed from.
    job_version: int
    # Job type: selects the handler.
    job_type: str
    # Owning tenant.
    tenant_id: str
    # Execution priority.
    priority: Priority
    # Attempt number, 1-based: the fencing token.
    attempt: int
    # The slot on the schedule's grid: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    scheduled_time: int
    # The slot plus jitter: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    fire_time: int
    # Start of the period the occurrence covers: UTC instant as epoch milliseconds (plain long,
    # no logicalType: see docs/decisions/0020).
    period_start: int
    # End of the period the occurrence covers: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020); null when absent.
    period_end: int | None
    # Rendered handler input as JSON text.
    payload: str
    # Attempts before dead-lettering.
    max_attempts: int
    # What caused this attempt.
    trigger: ExecutionTrigger
    # True when the occurrence is emitted after its fire_time was missed (recovery, catch-up or
    # coalesce), not on time.
    late: bool
    # When the request was emitted: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    requested_at: int
    # Lease length a worker gets for this attempt.
    lease_seconds: int
    # Interval at which the worker must heartbeat.
    heartbeat_seconds: int
    # Longest this attempt may run, in seconds: past it the worker fails it as retryable and
    # frees its slot. Null: the job type's limit, else the worker's (--max-run-seconds). Added
    # in v2.
    max_run_seconds: int | None
    # The named task queue the job's executions go to (its `queue`); null: the default queue.
    # Only workers serving this queue take the request (decision 0053; added in v3).
    queue: str | None


MisfirePolicy = Literal["catch_up", "coalesce", "skip"]


OverlapPolicy = Literal["allow", "skip", "queue_one"]


class JobDefinition(TypedDict):
    """A job definition: the value of the compacted topic jobs.definitions (key = jobId; a
    tombstone deletes). Field names are camelCase because this is the same document as the JSON
    body of POST /jobs (DESIGN 13)."""

    # Stable job id, chosen by the producer or generated by the API.
    jobId: str
    # Increments on every change of the definition; part of an occurrence's identity.
    version: int
    # Job type: selects the handler a worker runs.
    type: str
    # Handler input as JSON text (an object).
    payload: str
    # JSON text with {{ periodStart }}-style placeholders, rendered per occurrence; null when
    # payload is used as is.
    payloadTemplate: str | None
    # One-off job: the instant to run; UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020); null when absent.
    runAt: int | None
    # Recurring job: 5-field cron, or 6 with leading seconds (Quartz day terms accepted, see
    # docs/schedules.md); null for one-off and interval jobs.
    cron: str | None
    # IANA zone the cron expression is read in.
    timezone: str
    # Execution priority.
    priority: Priority
    # Attempts before the execution is dead-lettered.
    maxAttempts: int
    # Producer-chosen key that makes a repeated create a no-op.
    idempotencyKey: str | None
    # Longest allowed time between successes of a recurring job, e.g. "26h"; what the watchdog
    # asserts.
    expectedMaxInterval: str | None
    # Jitter window, e.g. "30s"; "0s" opts out; null means the default window.
    jitter: str | None
    # Misfire policy.
    misfirePolicy: MisfirePolicy
    # Upper bound on missed occurrences fired under catch_up.
    maxCatchUp: int
    # Overlap policy.
    overlapPolicy: OverlapPolicy
    # DST policy name; null means the default policy of DESIGN 4.
    dstPolicy: str | None
    # Owning tenant.
    tenantId: str
    # False while the job is paused.
    enabled: bool
    # When the job was first created: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    createdAt: int
    # When this version was written: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    updatedAt: int
    # Free-form string labels.
    labels: dict[str, str]
    # Longest one attempt may run, e.g. "2h" (1s to 7d); past it the worker cancels the attempt
    # and it is retried. Null: the job type's or the worker's default (added in v2).
    maxRunTime: str | None
    # Interval job: a slot every this long on the UTC timeline, e.g. "90m" (whole seconds, 1s to
    # 366d); null for cron and one-off jobs (added in v3).
    every: str | None
    # Interval job: an instant the slots are aligned to (slots are phase + k*every); UTC epoch
    # milliseconds (plain long, see docs/decisions/0020); null means the epoch (added in v3).
    phase: int | None
    # Recurring job: no slot before this instant; UTC epoch milliseconds; null means no lower
    # bound (added in v3).
    startAt: int | None
    # Recurring job: no slot after this instant (inclusive); UTC epoch milliseconds; null means
    # no upper bound (added in v3).
    endAt: int | None
    # Recurring job: only the first maxRuns slots at or after startAt (or createdAt without
    # startAt) exist; null means unlimited (added in v3).
    maxRuns: int | None
    # The named task queue its executions go to, served by the workers started with that
    # --queue; null: the default queue (added in v4).
    queue: str | None


TimerCommandKind = Literal["trigger", "backfill"]


class TimerCommand(TypedDict):
    """A command to the timer instance that owns a job (topic timers.commands, key = job_id): fire
    now, or backfill a range of the schedule. The timer consumes it exactly once: its offset is
    committed in the same transaction as what it emits."""

    # Unique id of the command.
    command_id: str
    # The job the command is for.
    job_id: str
    # trigger: one execution now, outside the schedule; backfill: every slot of the schedule in
    # (range_start, range_end].
    kind: TimerCommandKind
    # When the command was issued: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    requested_at: int
    # Backfill range start, exclusive: epoch milliseconds UTC; null when absent.
    range_start: int | None
    # Backfill range end, inclusive: epoch milliseconds UTC; null when absent.
    range_end: int | None
    # For commands about one execution; null when absent.
    execution_id: str | None
    # Extra JSON text; null when absent.
    data: str | None


TimerKind = Literal["retry", "lease_deadline", "workflow_sleep", "approval_timeout", "manual"]


class PendingTimer(TypedDict):
    """A one-off timer owned by the job: a retry, a lease deadline, a workflow sleep or approval
    timeout."""

    # Unique id of the timer within the job (deterministic, so a re-request is idempotent).
    timer_id: str
    # Why the timer exists.
    kind: TimerKind
    # When the timer fires: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    fire_at: int
    # Execution the timer belongs to, if any.
    execution_id: str | None
    # Attempt the timer belongs to (the fencing token); 0 when not tied to an attempt.
    attempt: int
    # Extra data as JSON text. For an execution: its state and worker (from v3 the request is in
    # `request`; v1-v2 carried it here as `request`).
    data: str | None
    # For an execution: its current attempt's ExecutionRequest, single-object encoded - the very
    # bytes written to executions.<priority>, so the timer encodes each request once and a later
    # ExecutionRequest version still decodes (docs/decisions/0008).
    request: bytes | None


class TimerState(TypedDict):
    """The timer service's state for one job: the value of the compacted changelog timers.state
    (key = job_id), written in the same transaction as the execution requests it emits."""

    # The job.
    job_id: str
    # Definition version this state was computed for.
    job_version: int
    # Last occurrence slot emitted or skipped (the walk resumes after it): UTC instant as epoch
    # milliseconds (plain long, no logicalType: see docs/decisions/0020); null when absent.
    last_scheduled_time: int | None
    # Slot plus jitter of the last occurrence emitted: UTC instant as epoch milliseconds (plain
    # long, no logicalType: see docs/decisions/0020); null when absent.
    last_fire_time: int | None
    # Next occurrence slot, if the schedule has one: UTC instant as epoch milliseconds (plain
    # long, no logicalType: see docs/decisions/0020); null when absent.
    next_scheduled_time: int | None
    # When this state was written: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    updated_at: int
    # One-off timers owned by this job.
    pending: list[PendingTimer]
    # Only on a partition's checkpoint record (key __partition__/<N>): the next offset to read
    # of each consumed input topic-partition (e.g. timers.commands/N), written in the same
    # transaction as what that input caused, so a restore resumes exactly there.
    input_offsets: dict[str, int]
    # The timer transaction that wrote this record: a per-partition counter carried on from
    # owner to owner. A request on executions.<priority> carries the same number in its
    # `tickwheel-seq` header; a job's state with a lower seq than one of its requests has not
    # seen that request yet (docs/decisions/0008).
    seq: int


class WorkflowEvent(TypedDict):
    """One event in a workflow instance's durable history; the instance's state is a fold over
    these."""

    # Unique, deterministic event id.
    event_id: str
    # When the event happened: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    event_time: int
    # The workflow instance.
    workflow_id: str
    # Workflow definition.
    definition_id: str
    # Definition version the instance is pinned to.
    definition_version: int
    # Kind of workflow event (past tense, e.g. step_completed).
    event_type: str
    # Stable step name, if the event concerns a step.
    step_id: str | None
    # Step attempt; 0 when not about an attempt.
    attempt: int
    # Event data (e.g. a step result) as JSON text.
    data: str | None


__all__ = [
    "Alert",
    "AlertSeverity",
    "DeadLetter",
    "ExecutionControl",
    "ExecutionControlKind",
    "ExecutionEvent",
    "ExecutionEventType",
    "ExecutionRequest",
    "ExecutionTrigger",
    "JobDefinition",
    "MisfirePolicy",
    "OverlapPolicy",
    "PendingTimer",
    "Priority",
    "TimerCommand",
    "TimerCommandKind",
    "TimerKind",
    "TimerState",
    "WorkflowEvent",
]
