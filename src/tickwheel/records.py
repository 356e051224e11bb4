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
    # The incident this transition belongs to: <fingerprint>-<n>. Null: not an incident's
    # transition (a command, a state record) (added in v2).
    incident_id: str | None
    # The alert's identity: sha256(kind, subject), 16 hex digits (added in v2).
    fingerprint: str | None
    # opened, updated, acknowledged or resolved (added in v2).
    transition: str | None
    # The incident's state after this transition: firing or resolved (added in v2).
    state: str | None
    # What the alert is about: a job id, tenant/job type, priority/tenant, partition <p>, ...
    # (added in v2).
    subject: str | None
    # When the incident opened (the watchdog's event time): UTC epoch milliseconds (added in
    # v2).
    opened_at: int | None
    # When it resolved: UTC epoch milliseconds; null while open (added in v2).
    resolved_at: int | None
    # Who acknowledged the incident last (tickwheel alerts ack); null: nobody (added in v2).
    acknowledged_by: str | None
    # Their note (added in v2).
    acknowledged_note: str | None
    # When: UTC epoch milliseconds (added in v2).
    acknowledged_at: int | None
    # The parent incident that explains this one (shown, not notified); null: none (added in
    # v2).
    suppressed_by: str | None
    # Whether sinks that notify people (webhooks) send this transition: false for a child opened
    # under a parent (added in v2).
    notify: bool


class ApiAuditEvent(TypedDict):
    """One mutating HTTP API call (api.audit, key = tenant_id): who, what, with which request id,
    and the answer (docs/decisions/0068)."""

    # Unique id of this audit event.
    audit_id: str
    # When the call was answered: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    event_time: int
    # The tenant the call acted for.
    tenant_id: str
    # The API key used; null in the loopback development mode, which has no keys.
    key_id: str | None
    # HTTP method.
    method: str
    # The request path.
    path: str
    # The HTTP status answered.
    status: int
    # The request id (X-Request-Id).
    request_id: str
    # The Idempotency-Key sent, if any.
    idempotency_key: str | None
    # True when the answer was a recorded response replayed, not a new effect.
    replayed: bool


class ApiKey(TypedDict):
    """An HTTP API key (api.keys, compacted, key = key_id): the tenant it acts for, its scopes and
    the SHA-256 of its secret. The secret itself is never stored (docs/decisions/0068)."""

    # Public id of the key, the part of the token after `tw_` and before the secret.
    key_id: str
    # The tenant every call made with this key acts for.
    tenant_id: str
    # Granted scopes: read, write, admin, approve.
    scopes: list[str]
    # Hex SHA-256 of the whole token (the secret is 256 random bits: no slow hash needed).
    secret_sha256: str
    # When the key was issued: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    created_at: int
    # When the key was revoked (epoch ms); a revoked key authenticates nothing.
    revoked_at: int | None
    # What the key is for, as its issuer wrote it.
    description: str | None


class Calendar(TypedDict):
    """A named holiday calendar: the value of calendars (key = name, compacted; tombstone =
    delete). Jobs name it in calendar with a businessDays rule."""

    # The calendar's name (its key): 1-64 lowercase letters, digits, '.', '_' or '-'.
    name: str
    # 1 for the first put, one more on every later put of the same name.
    version: int
    # Its holidays: local dates as YYYY-MM-DD, ascending, each once (in each job's own
    # timezone).
    dates: list[str]
    # Days of the week that are never business days, numbered as cron does (0 = Sunday); default
    # Saturday and Sunday.
    weekend: list[int]
    # What the calendar is, in its author's words; null when absent.
    description: str | None
    # When this version was put: UTC instant as epoch milliseconds (plain long, no logicalType:
    # see docs/decisions/0020).
    updated_at: int


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


DeadLetterAction = Literal["retried", "discarded"]


class DeadLetterResolution(TypedDict):
    """What an operator did about a dead letter (executions.dlq.resolutions, compacted, key =
    dead_letter_id): retried or discarded, by whom and why. A dead letter with a resolution is
    no longer unresolved (docs/decisions/0102)."""

    # Unique id of this resolution (a UUID).
    resolution_id: str
    # The dead letter resolved (its dead_letter_id on executions.dlq).
    dead_letter_id: str
    # When it was resolved: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    event_time: int
    # retried: the work was asked for again (retry_command_id says how); discarded: set aside on
    # purpose, nothing re-run.
    action: DeadLetterAction
    # Who resolved it: `console:<name>`, `api-key <key id>`, or the CLI's user.
    by: str
    # Why, in the operator's words; null when none was given.
    note: str | None
    # The dead letter's job, if it names one.
    job_id: str | None
    # The dead letter's execution, if it names one (the watchdog's dead-letter age is per
    # execution).
    execution_id: str | None
    # The tenant that resolved it; null: default.
    tenant_id: str | None
    # retried: the TimerCommand (trigger) sent on timers.commands.
    retry_command_id: str | None
    # retried: the execution id the timer gives the triggered run (the job's identity of the
    # command's requested_at at the version read), if known.
    retry_execution_id: str | None


ExecutionControlKind = Literal["cancel"]


class ExecutionControl(TypedDict):
    """A control instruction for one execution, broadcast to every worker: the value of
    executions.control (key = execution_id, one partition)."""

    # Unique id of this control record.
    control_id: str
    # The execution it applies to: the attempts `attempt` names (every attempt when it is null).
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
    # Cancel only attempts up to and including this one (a workflow stopping the running attempt
    # before it retries the step: the retry's higher attempt must run); null: every attempt, as
    # in v1.
    attempt: int | None


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
    # For a workflow step's execution: the workflow instance it belongs to (the handler's
    # context carries it); null for a job's execution. Added in v4 (docs/decisions/0061).
    workflow_id: str | None
    # For a workflow step's execution: the step's stable id (with `workflow_id`); null for a
    # job's execution. Added in v4.
    step_id: str | None


class IdempotencyRecord(TypedDict):
    """The recorded response to an HTTP POST made with an Idempotency-Key (api.idempotency,
    compacted, key = tenant_id + '/' + idempotency_key); replayed to a retry with the same body
    (docs/decisions/0069)."""

    # The tenant of the key that made the request: keys are per tenant.
    tenant_id: str
    # The caller's Idempotency-Key.
    idempotency_key: str
    # Hex SHA-256 of the method, the path and the body: a retry with another body is refused.
    fingerprint: str
    # The HTTP status answered.
    status: int
    # The response body as sent (JSON text).
    body: str
    # The response headers worth replaying (Location, ETag, content type) as a JSON object.
    headers: str
    # When the response was recorded: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    created_at: int
    # The request id of the original request.
    request_id: str


JobCommandKind = Literal["create", "update", "delete"]


class JobCommand(TypedDict):
    """A request to change one job, judged by the single writer that owns the job's partition
    (topic jobs.commands, key = job_id, co-partitioned with jobs.definitions;
    docs/decisions/0099, 0126). The judge answers every command with one JobVerdict."""

    # Unique id of the command; its verdict carries it.
    command_id: str
    # The job the command is for (the key).
    job_id: str
    # create: only if no job has the id; update and delete: only if the job exists (and is at
    # expected_version when one is given).
    kind: JobCommandKind
    # The version the writer read; null: any version.
    expected_version: int | None
    # For create and update: the JobDefinition as the writer validated it, in the wire format of
    # jobs.definitions (single-object encoding). The judge sets its version, createdAt and
    # updatedAt. Null for delete.
    definition: bytes | None
    # The tenant the writer acts for; null: unscoped (the SDK, the CLI). An update or delete of
    # another tenant's job is answered not_found.
    tenant_id: str | None
    # tenant_id/idempotency_key of the HTTP request, null without a key.
    idempotency_slot: str | None
    # The request's fingerprint (IdempotencyRecord.fingerprint), null without a key.
    fingerprint: str | None
    # JSON {status, body, headers, request_id}: the answer to record on api.idempotency, in the
    # verdict's transaction, if the command is accepted; null: nothing to record.
    idempotency_answer: str | None
    # When the command was issued: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020).
    requested_at: int
    # The writer's instance id (informational: every waiter follows jobs.verdicts and picks its
    # own command ids).
    reply_to: str | None


MisfirePolicy = Literal["catch_up", "coalesce", "skip"]


OverlapPolicy = Literal["allow", "skip", "queue_one"]


class ScheduleSpec(TypedDict):
    """One more cron or interval spec of a job (exactly one of cron or every); the job's timezone
    and dstPolicy apply."""

    # A cron expression, in the job's timezone; null for an interval spec.
    cron: str | None
    # An interval such as 90m; null for a cron spec.
    every: str | None
    # The interval's anchor, UTC epoch milliseconds; null: the epoch.
    phase: int | None


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
    # Further specs of a recurring job: its slots are the union of its own cron/every and these,
    # each slot once; null: none (added in v5).
    schedules: list[ScheduleSpec] | None
    # Slots removed from the job: local dates (YYYY-MM-DD, every slot on that date in the job's
    # timezone) or cron specs (every slot whose local time they name); null: none (added in v5).
    exclude: list[str] | None
    # The name of a holiday calendar on the calendars topic whose dates (and weekend) are not
    # business days; null: weekends only when businessDays is set (added in v5).
    calendar: str | None
    # What a slot on a non-business day does: skip, next or previous (moved to that business day
    # at the same local time); null: skip when a calendar is set, else no rule (added in v5).
    businessDays: str | None
    # Shortest a successful run should take, e.g. "30s" (1s to 7d); the watchdog raises
    # run_too_short when the newest run succeeded faster. Null: not watched (added in v6).
    minRunTime: str | None
    # Who disabled the job (a disable's account; meaningful while enabled is false). Null: not
    # said (added in v6).
    disabledBy: str | None
    # Who answers for the disabled job (a team or person), shown by `tickwheel jobs disabled`.
    # Null: not said (added in v6).
    disabledOwner: str | None
    # Why the job is disabled. Null: not said (added in v6).
    disabledReason: str | None
    # When the disable is to be looked at again: UTC epoch milliseconds; the watchdog raises
    # disabled_past_review once it has passed with the job still disabled. Null: no review date
    # (added in v6).
    disabledReviewBy: int | None
    # An output freshness check, independent of the scheduler's view, as JSON text: {"topic": a
    # Kafka topic whose newest record time is the job's output time, "warnAfter": duration,
    # "errorAfter": duration}; the watchdog raises output_stale past them. Null: none (added in
    # v7).
    freshness: str | None


JobVerdictOutcome = Literal[
    "created",
    "updated",
    "deleted",
    "exists",
    "not_found",
    "version_conflict",
    "invalid",
]


class JobVerdict(TypedDict):
    """The single writer's answer to one JobCommand (topic jobs.verdicts, one partition, key =
    command_id), written in the same transaction as the definition it accepted
    (docs/decisions/0099, 0126)."""

    # The command judged.
    command_id: str
    # The command's job.
    job_id: str
    # created, updated, deleted: accepted and written; exists: a create of a job that exists;
    # not_found: no such job (or another tenant's); version_conflict: the job is not at
    # expected_version; invalid: the command could not be read (detail says why).
    outcome: JobVerdictOutcome
    # The job's version after the verdict (the new one when accepted, the existing one when
    # refused); null: no job.
    current_version: int | None
    # The job's definition after the verdict, as on jobs.definitions (the written one when
    # accepted, the existing one when refused); null: none or deleted.
    definition: bytes | None
    # When it was judged: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    judged_at: int
    # True when the command's idempotency_answer was written to api.idempotency in this
    # verdict's transaction.
    idempotency_recorded: bool
    # Why, for invalid; null otherwise.
    detail: str | None


class JobWriterCheckpoint(TypedDict):
    """Where the single writer of partition p of jobs.commands has judged to (topic
    jobwriter.state, compacted, key = '__partition__/' + p), written in the same transaction as
    the verdicts it covers (docs/decisions/0129)."""

    # The partition of jobs.commands.
    partition: int
    # The offset of the next command to judge.
    next_command: int
    # When it was written: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    updated_at: int


TimerCommandKind = Literal[
    "trigger",
    "backfill",
    "run_step",
    "start_timer",
    "cancel_timer",
    "cancel_execution",
]


class TimerCommand(TypedDict):
    """A command to the timer instance that owns a key of timers.commands: for a job (key = job_id)
    fire now or backfill a range; for a workflow (key = the workflow's step key,
    docs/decisions/0061) run one attempt of a step, start or cancel a one-off timer, cancel a
    step's execution. The timer consumes it exactly once: its offset is committed in the same
    transaction as what it emits."""

    # Unique id of the command.
    command_id: str
    # The job the command is for; for a workflow command, the workflow's step key (`__wf/...`,
    # docs/decisions/0061), which every record of its step executions carries as job_id.
    job_id: str
    # trigger: one execution now, outside the schedule; backfill: every slot of the schedule in
    # (range_start, range_end]; run_step: attempt `attempt` of a workflow step's execution
    # (`execution_id`), not before `fire_at`; start_timer: a one-off timer `timer_id` firing at
    # `fire_at` (TimerFired to workflows.inputs); cancel_timer: drop timer `timer_id`;
    # cancel_execution: stop attempt `attempt` of `execution_id` (the timer answers with the
    # step's outcome). The workflow kinds were added in v2.
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
    # Workflow commands: the workflow instance (the TimerFired and outcome inputs go to
    # workflows.inputs under this key). Added in v2.
    workflow_id: str | None
    # run_step, cancel_execution: the step's stable id. Added in v2.
    step_id: str | None
    # run_step, cancel_execution: the attempt (the fencing token, counted by the workflow).
    # Added in v2.
    attempt: int
    # run_step, cancel_execution: the execution is the step's compensation. Added in v2.
    compensation: bool
    # run_step: the job type the attempt runs. Added in v2.
    job_type: str | None
    # run_step: the attempt's payload as JSON text (already rendered). Added in v2.
    payload: str | None
    # run_step: the tenant the execution counts against; null: default. Added in v2.
    tenant_id: str | None
    # run_step: the step's maxAttempts; the failure of the last attempt (or a permanent one) is
    # dead-lettered. Added in v2.
    max_attempts: int
    # start_timer, cancel_timer: the timer's id within its workflow (deterministic, so a repeat
    # is idempotent). Added in v2.
    timer_id: str | None
    # start_timer: when it fires; run_step: not before when the attempt is requested: UTC
    # instant as epoch milliseconds (plain long, no logicalType: see docs/decisions/0020); null
    # when absent. Added in v2.
    fire_at: int | None


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


class WorkflowDefinition(TypedDict):
    """One published version of a workflow definition (topic workflows.definitions, compacted, key
    = <definitionId>/<version>): immutable once published. The body is the JSON document of
    docs/workflows.md."""

    # The definition's id (definitionId).
    definition_id: str
    # The version, from 1.
    version: int
    # The definition as JSON text (camelCase, docs/workflows.md), checked by
    # tickwheel.core.workflow.parse_definition.
    body: str
    # When it was published: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    published_at: int
    # Who published it.
    published_by: str | None


class WorkflowEvent(TypedDict):
    """One event in a workflow instance's durable history (topic workflows.events, key =
    workflow_id); the instance's state is a fold over these. (workflow_id, seq) identifies it;
    event_id is wf:<workflow_id>:<seq>."""

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
    # Per-instance event counter, from 1, without gaps: (workflow_id, seq) is unique. 0 only in
    # v1 records. Added in v2.
    seq: int
    # Who caused it, for operator and approver inputs (retry_step, complete_step, skip_step,
    # approve, reject, cancel). Added in v2.
    actor: str | None
    # The definition's tenant, if it names one. Added in v2.
    tenant_id: str | None
    # For an event about a step's execution (scheduled, outcome, fenced): its execution id,
    # stable across attempts. Added in v2.
    execution_id: str | None
    # For a failure: what failed, as the worker, the timer or the fold said it. Added in v2.
    error: str | None
    # The workflows.inputs record this event was decided from (its input_id). Added in v2.
    cause_input_id: str | None
    # The instance's status after this event (running, stopping, compensating, blocked,
    # succeeded, failed, cancelled, compensated). Added in v2.
    status: str | None


class WorkflowInput(TypedDict):
    """What a workflow instance is told (topic workflows.inputs, key = workflow_id): start, a
    step's accepted outcome and a fired timer (from the timer, in its transaction), approve,
    reject, cancel and operator repairs (from the SDK, CLI and API). The orchestrator owning the
    key's partition folds it (docs/decisions/0059, 0061)."""

    # Unique id of this input (deterministic where the producer can make it so: the timer's
    # outcome of an attempt is the same id on every retry of its transaction).
    input_id: str
    # The workflow instance.
    workflow_id: str
    # The input's kind: start, step_succeeded, step_failed, step_cancelled, timer_fired,
    # approve, reject, cancel, retry_step, complete_step, skip_step.
    kind: str
    # When the input was produced: UTC instant as epoch milliseconds (plain long, no
    # logicalType: see docs/decisions/0020). The only time the fold sees.
    at: int
    # The input as JSON text, as tickwheel.core.workflow.input_to_json writes it (kind, at_ms
    # and the kind's fields).
    body: str
    # start: the definition to run.
    definition_id: str | None
    # start: the version to pin the instance to; null: the latest version the orchestrator
    # knows.
    definition_version: int | None
    # Who sent it (operator and approver inputs).
    actor: str | None


class WorkflowSnapshot(TypedDict):
    """The orchestrator's state (topic workflows.state, compacted): an instance's state after its
    latest event (key = workflow_id), or a partition's checkpoint (key = __partition__/<N>: its
    input offsets). Written in the same transaction as the events it follows from
    (docs/decisions/0061)."""

    # The instance, or the checkpoint key.
    workflow_id: str
    # The definition the instance runs (empty on a checkpoint).
    definition_id: str
    # The version it is pinned to (0 on a checkpoint).
    definition_version: int
    # The instance's status (new, running, stopping, compensating, blocked, succeeded, failed,
    # cancelled, compensated; checkpoint on a checkpoint).
    status: str
    # The seq of the instance's latest event.
    seq: int
    # The instance's state as JSON text (tickwheel.core.workflow.snapshot); null on a
    # checkpoint.
    state: str | None
    # When it was written: UTC instant as epoch milliseconds (plain long, no logicalType: see
    # docs/decisions/0020).
    updated_at: int
    # Only on a checkpoint: the next offset to read of each input topic-partition, written in
    # the same transaction as what those inputs caused.
    input_offsets: dict[str, int]


__all__ = [
    "Alert",
    "AlertSeverity",
    "ApiAuditEvent",
    "ApiKey",
    "Calendar",
    "DeadLetter",
    "DeadLetterAction",
    "DeadLetterResolution",
    "ExecutionControl",
    "ExecutionControlKind",
    "ExecutionEvent",
    "ExecutionEventType",
    "ExecutionRequest",
    "ExecutionTrigger",
    "IdempotencyRecord",
    "JobCommand",
    "JobCommandKind",
    "JobDefinition",
    "JobVerdict",
    "JobVerdictOutcome",
    "JobWriterCheckpoint",
    "MisfirePolicy",
    "OverlapPolicy",
    "PendingTimer",
    "Priority",
    "ScheduleSpec",
    "TimerCommand",
    "TimerCommandKind",
    "TimerKind",
    "TimerState",
    "WorkflowDefinition",
    "WorkflowEvent",
    "WorkflowInput",
    "WorkflowSnapshot",
]
