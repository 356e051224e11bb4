"""Job definitions from a producer's side: validate, then publish to `jobs.definitions`.

    from tickwheel.sdk.jobs import JobsClient
    jobs = JobsClient()
    jobs.create({"type": "noop", "cron": "*/5 * * * *", "timezone": "Europe/London"})

Definitions are validated by the scheduling core before anything is published; every change
increments the job's `version`; delete publishes a tombstone. Trigger-now and backfill are
commands to the timer that owns the job (`timers.commands`), never a second scheduler.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from typing import Any

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import partition_count, read_to_end
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.jitter import default_jitter_window_ms
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.topology import topic_name

MAX_PAYLOAD_BYTES = int(os.environ.get("TICKWHEEL_MAX_PAYLOAD_BYTES", 64 * 1024))
PRIORITIES = ("high", "normal", "low")
MISFIRE_POLICIES = ("catch_up", "coalesce", "skip")
OVERLAP_POLICIES = ("allow", "skip", "queue_one")
KNOWN_FIELDS = {
    "jobId", "type", "payload", "payloadTemplate", "runAt", "cron", "timezone", "priority",
    "maxAttempts", "idempotencyKey", "expectedMaxInterval", "jitter", "misfirePolicy",
    "maxCatchUp", "overlapPolicy", "dstPolicy", "tenantId", "enabled", "labels",
}  # fmt: skip


class UnknownJob(TickwheelError, LookupError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id!r} (never created, or deleted)")
        self.job_id = job_id


class JobExists(TickwheelError, ValueError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id!r} exists already; update it instead of creating it")
        self.job_id = job_id


def parse_instant_ms(text: str, field: str) -> int:
    """An ISO 8601 instant with an explicit offset (or Z), as epoch milliseconds."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InvalidInput(
            field, f"{text!r} is not an ISO 8601 instant, e.g. 2026-12-01T09:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(
            field,
            f"{text!r} has no UTC offset; write it with one, e.g. 2026-12-01T09:00:00+01:00 or ...Z",
        )
    return int(parsed.timestamp() * 1000)


def validate_job(
    spec: dict[str, Any], now_ms: int, version: int = 1, created_at_ms: int | None = None
) -> dict[str, Any]:
    """A JSON job definition (DESIGN §13 field names) checked and turned into the Avro
    `JobDefinition` record. Raises InvalidInput naming the field and what is accepted."""
    if not isinstance(spec, dict):
        raise InvalidInput("definition", "a job definition is a JSON object")
    unknown = sorted(set(spec) - KNOWN_FIELDS)
    if unknown:
        raise InvalidInput(
            unknown[0], f"unknown field; accepted fields are {', '.join(sorted(KNOWN_FIELDS))}"
        )
    job_type = spec.get("type")
    if not isinstance(job_type, str) or not job_type.strip() or len(job_type) > 100:
        raise InvalidInput("type", "required: the job type a worker handles, e.g. 'noop' or 'http'")
    job_id = spec.get("jobId") or str(uuid.uuid4())
    if not isinstance(job_id, str) or len(job_id) > 200 or not job_id.isprintable():
        raise InvalidInput("jobId", "a printable string of at most 200 characters")
    payload = spec.get("payload", {})
    if not isinstance(payload, dict):
        raise InvalidInput("payload", "a JSON object")
    payload_text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    template = spec.get("payloadTemplate")
    if template is not None and not isinstance(template, str):
        raise InvalidInput("payloadTemplate", "a string with {{ periodStart }}-style placeholders")
    size = len(payload_text.encode()) + len((template or "").encode())
    if size > MAX_PAYLOAD_BYTES:
        raise InvalidInput("payload", f"is {size} bytes; the limit is {MAX_PAYLOAD_BYTES} bytes")

    run_at, cron = spec.get("runAt"), spec.get("cron")
    if (run_at is None) == (cron is None):
        raise InvalidInput(
            "schedule", "give exactly one of runAt (an ISO 8601 instant) or cron + timezone"
        )
    timezone = spec.get("timezone")
    if run_at is not None:
        if not isinstance(run_at, str):
            raise InvalidInput(
                "runAt", "an ISO 8601 instant with an offset, e.g. 2026-12-01T09:00:00Z"
            )
        run_at_ms = parse_instant_ms(run_at, "runAt")
        schedule = parse_schedule(run_at=run_at, timezone=timezone)
    else:
        run_at_ms = None
        schedule = parse_schedule(cron=cron, timezone=timezone, dst_policy=spec.get("dstPolicy"))

    priority = spec.get("priority", "normal")
    if priority not in PRIORITIES:
        raise InvalidInput("priority", f"{priority!r}; accepted: {', '.join(PRIORITIES)}")
    max_attempts = spec.get("maxAttempts", 3)
    if (
        not isinstance(max_attempts, int)
        or isinstance(max_attempts, bool)
        or not 1 <= max_attempts <= 100
    ):
        raise InvalidInput("maxAttempts", "an integer from 1 to 100")
    misfire = spec.get("misfirePolicy", "catch_up")
    if misfire not in MISFIRE_POLICIES:
        raise InvalidInput("misfirePolicy", f"{misfire!r}; accepted: {', '.join(MISFIRE_POLICIES)}")
    overlap = spec.get("overlapPolicy", "allow")
    if overlap not in OVERLAP_POLICIES:
        raise InvalidInput("overlapPolicy", f"{overlap!r}; accepted: {', '.join(OVERLAP_POLICIES)}")
    max_catch_up = spec.get("maxCatchUp", 100)
    if (
        not isinstance(max_catch_up, int)
        or isinstance(max_catch_up, bool)
        or not 1 <= max_catch_up <= 100_000
    ):
        raise InvalidInput("maxCatchUp", "an integer from 1 to 100000")
    jitter = spec.get("jitter")
    if jitter is not None:
        if not isinstance(jitter, str):
            raise InvalidInput("jitter", "a duration such as '30s', or '0s' to opt out")
        jitter_ms = parse_duration_ms(jitter, "jitter")
        if jitter_ms > 3_600_000:
            raise InvalidInput("jitter", "at most 1h")
        # Jitter must stay below the period, so it never reorders a job's own occurrences.
        default_jitter_window_ms(
            compile_schedule(schedule).nominal_period_ms, explicit_ms=jitter_ms
        )
    interval = spec.get("expectedMaxInterval")
    if interval is not None:
        if not isinstance(interval, str):
            raise InvalidInput("expectedMaxInterval", "a duration such as '26h'")
        parse_duration_ms(interval, "expectedMaxInterval")
    tenant = spec.get("tenantId", "default")
    if not isinstance(tenant, str) or not tenant or len(tenant) > 100:
        raise InvalidInput("tenantId", "a non-empty string of at most 100 characters")
    enabled = spec.get("enabled", True)
    if not isinstance(enabled, bool):
        raise InvalidInput("enabled", "true or false")
    labels = spec.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise InvalidInput("labels", "an object of string values")
    idempotency_key = spec.get("idempotencyKey")
    if idempotency_key is not None and not isinstance(idempotency_key, str):
        raise InvalidInput("idempotencyKey", "a string")

    return {
        "jobId": job_id,
        "version": version,
        "type": job_type,
        "payload": payload_text,
        "payloadTemplate": template,
        "runAt": run_at_ms,
        "cron": cron,
        "timezone": schedule.timezone,
        "priority": priority,
        "maxAttempts": max_attempts,
        "idempotencyKey": idempotency_key,
        "expectedMaxInterval": interval,
        "jitter": jitter,
        "misfirePolicy": misfire,
        "maxCatchUp": max_catch_up,
        "overlapPolicy": overlap,
        "dstPolicy": spec.get("dstPolicy"),
        "tenantId": tenant,
        "enabled": enabled,
        "createdAt": created_at_ms if created_at_ms is not None else now_ms,
        "updatedAt": now_ms,
        "labels": labels,
    }


def definition_to_spec(record: dict[str, Any]) -> dict[str, Any]:
    """The JSON view of a stored definition (what `jobs get` prints and an update starts from)."""
    spec = {k: v for k, v in record.items() if v is not None}
    spec["payload"] = json.loads(record["payload"])
    if record.get("runAt") is not None:
        spec["runAt"] = (
            datetime.fromtimestamp(record["runAt"] / 1000, tz=UTC)
            .isoformat()
            .replace("+00:00", "Z")
        )
    return spec


class JobsClient:
    """Create, read and change job definitions on the cluster at KAFKA_BOOTSTRAP_SERVERS."""

    def __init__(self, bootstrap: str | None = None, clock: Clock | None = None) -> None:
        self.bootstrap = bootstrap
        self.clock = clock or SystemClock()
        self.topic = topic_name("jobs.definitions")
        self.commands_topic = topic_name("timers.commands")
        self._producer: EventProducer | None = None

    def _now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def _publish(self, topic: str, key: str, value: bytes | None) -> None:
        if self._producer is None:
            self._producer = EventProducer(self.bootstrap)
        self._producer.send(topic, key, value)
        self._producer.flush()

    # -- reads -----------------------------------------------------------------------------
    def get(self, job_id: str) -> dict[str, Any]:
        """The current definition record, or UnknownJob."""
        partition = partition_for(job_id, partition_count(self.topic, self.bootstrap))
        current: dict[str, Any] | None = None
        for record in read_to_end(self.topic, [partition], self.bootstrap):
            if record.key == job_id:
                current = None if record.value is None else decode(record.value, "JobDefinition")[1]
        if current is None:
            raise UnknownJob(job_id)
        return current

    def list(self) -> list[dict[str, Any]]:
        latest: dict[str, dict[str, Any] | None] = {}
        for record in read_to_end(self.topic, None, self.bootstrap):
            if record.key is None:
                continue
            latest[record.key] = (
                None if record.value is None else decode(record.value, "JobDefinition")[1]
            )
        return sorted((d for d in latest.values() if d is not None), key=lambda d: d["jobId"])

    # -- writes ----------------------------------------------------------------------------
    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        now = self._now_ms()
        record = validate_job(spec, now)
        try:
            existing = self.get(record["jobId"])
        except UnknownJob:
            existing = None
        if existing is not None:
            raise JobExists(record["jobId"])
        self._publish(self.topic, record["jobId"], encode("JobDefinition", record))
        return record

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        current = self.get(job_id)
        if expected_version is not None and expected_version != current["version"]:
            raise InvalidInput(
                "expectedVersion",
                f"job {job_id!r} is at version {current['version']}, not {expected_version}",
            )
        spec = definition_to_spec(current)
        for key in ("version", "createdAt", "updatedAt"):
            spec.pop(key, None)
        if "cron" in changes:
            spec.pop("runAt", None)
        if "runAt" in changes:
            spec.pop("cron", None)
        spec.update(changes)
        record = validate_job(spec, self._now_ms(), current["version"] + 1, current["createdAt"])
        self._publish(self.topic, job_id, encode("JobDefinition", record))
        return record

    def pause(self, job_id: str) -> dict[str, Any]:
        return self.update(job_id, {"enabled": False})

    def resume(self, job_id: str) -> dict[str, Any]:
        return self.update(job_id, {"enabled": True})

    def delete(self, job_id: str) -> None:
        self.get(job_id)
        self._publish(self.topic, job_id, None)

    def trigger(self, job_id: str) -> dict[str, Any]:
        """Ask the owning timer to fire the job now, once, outside its schedule."""
        self.get(job_id)
        return self._command(job_id, "trigger")

    def backfill(self, job_id: str, from_ms: int, to_ms: int) -> dict[str, Any]:
        """Ask the owning timer to emit every slot of the job's schedule in (from, to], each with
        its own period and the same execution_id the scheduled occurrence has."""
        if to_ms <= from_ms:
            raise InvalidInput("to", "must be after --from")
        self.get(job_id)
        return self._command(job_id, "backfill", from_ms, to_ms)

    def _command(
        self, job_id: str, kind: str, from_ms: int | None = None, to_ms: int | None = None
    ) -> dict[str, Any]:
        command = {
            "command_id": str(uuid.uuid4()),
            "job_id": job_id,
            "kind": kind,
            "requested_at": self._now_ms(),
            "range_start": from_ms,
            "range_end": to_ms,
            "execution_id": None,
            "data": None,
        }
        self._publish(self.commands_topic, job_id, encode("TimerCommand", command))
        return command
