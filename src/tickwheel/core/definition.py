"""Job definitions: the one set of rules, for the JSON a producer writes and the stored record.

`validate_definition` checks a JSON definition (DESIGN §13 field names) and returns the Avro
`JobDefinition` record to publish; `check_definition_record` applies the same rules to a
record as it is read back from `jobs.definitions` (whoever published it, with whatever
client), so the SDK and the timer can never disagree about what a job may be. Both raise
`InvalidInput` whose `field` names the offending field and whose message says what is
accepted. Pure: the caller passes the clock reading, a fresh id, the payload limit and the
operator's allowed networks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar, get_args

from tickwheel.core.jitter import default_jitter_window_ms
from tickwheel.core.period import check_payload_template
from tickwheel.core.queues import DEFAULT_QUEUE, QUEUE_NAME
from tickwheel.core.record_schedule import freeze_specs, record_adjustments, thaw_specs
from tickwheel.core.schedule import Schedule, compile_schedule, parse_schedule
from tickwheel.core.targets import IPNetwork, url_problem
from tickwheel.core.watchdog.fields import (
    MAX_RUN_MS,
    MIN_RUN_MS,
    check_disable_account,
    check_freshness,
    check_min_run_time,
)
from tickwheel.core.watchdog.fields import check_duration as _check_duration
from tickwheel.errors import InvalidInput
from tickwheel.records import JobDefinition, MisfirePolicy, OverlapPolicy, Priority

__all__ = [
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "DEFAULT_QUEUE",
    "KNOWN_FIELDS",
    "MAX_BACKFILL",
    "MISFIRE_POLICIES",
    "OVERLAP_POLICIES",
    "PRIORITIES",
    "QUEUE_NAME",
    "RESERVED_ID_PREFIX",
    "parse_instant_ms",
    "validate_definition",
]

DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024
# The accepted values are the schema's enum symbols (the generated Literals), in its order.
PRIORITIES: tuple[Priority, ...] = get_args(Priority)
MISFIRE_POLICIES: tuple[MisfirePolicy, ...] = get_args(MisfirePolicy)
OVERLAP_POLICIES: tuple[OverlapPolicy, ...] = get_args(OverlapPolicy)
# The timer keeps its partition checkpoints in the job-key space of `timers.state`
# (`__partition__/N`): ids starting with `__` belong to tickwheel.
RESERVED_ID_PREFIX = "__"
MAX_JOB_ID_LENGTH = 200
KNOWN_FIELDS = frozenset(
    {
        "jobId",
        "type",
        "payload",
        "payloadTemplate",
        "runAt",
        "cron",
        "timezone",
        "priority",
        "maxAttempts",
        "idempotencyKey",
        "expectedMaxInterval",
        "jitter",
        "misfirePolicy",
        "maxCatchUp",
        "overlapPolicy",
        "dstPolicy",
        "tenantId",
        "enabled",
        "labels",
        "maxRunTime",
        "queue",
        "every",
        "phase",
        "startAt",
        "endAt",
        "maxRuns",
        "schedules",
        "exclude",
        "calendar",
        "businessDays",
        "minRunTime",
        "disabledBy",
        "disabledOwner",
        "disabledReason",
        "disabledReviewBy",
        "freshness",
    }
)
# Schedule fields besides runAt, as (JSON name, parse_schedule keyword); instants among them
# are ISO text in the JSON form and epoch ms in the record.
_SCHEDULE_FIELDS = (
    ("cron", "cron"),
    ("timezone", "timezone"),
    ("dstPolicy", "dst_policy"),
    ("every", "every"),
    ("phase", "phase"),
    ("startAt", "start_at"),
    ("endAt", "end_at"),
    ("maxRuns", "max_runs"),
    ("schedules", "schedules"),
    ("exclude", "exclude"),
    ("calendar", "calendar"),
    ("businessDays", "business_days"),
)
_MAX_JITTER_MS = 3_600_000


def parse_instant_ms(text: str, field: str) -> int:
    """An ISO 8601 instant with an explicit offset (or Z), as epoch milliseconds."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InvalidInput(
            field,
            f"{text!r} is not an ISO 8601 instant; accepted: e.g. 2026-12-01T09:00:00Z "
            "or 2026-12-01T09:00:00+01:00",
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(
            field,
            f"{text!r} has no UTC offset; accepted: an instant with one, e.g. "
            "2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z",
        )
    return int(parsed.timestamp() * 1000)


def _int_in(spec: Mapping[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = spec.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(field, f"{value!r}; accepted: an integer from {low} to {high}")
    return value


Choice = TypeVar("Choice", bound=str)


def _one_of(
    spec: Mapping[str, Any], field: str, default: Choice, accepted: tuple[Choice, ...]
) -> Choice:
    value = spec.get(field, default)
    if value not in accepted:
        raise InvalidInput(field, f"{value!r}; accepted: {', '.join(accepted)}")
    return accepted[accepted.index(value)]


def check_job_id(job_id: object) -> str:
    if not isinstance(job_id, str) or not job_id or len(job_id) > MAX_JOB_ID_LENGTH:
        raise InvalidInput(
            "jobId", f"accepted: a printable string of 1 to {MAX_JOB_ID_LENGTH} characters"
        )
    if not job_id.isprintable():
        raise InvalidInput("jobId", f"{job_id!r} is not printable; accepted: a printable string")
    if job_id.startswith(RESERVED_ID_PREFIX):
        raise InvalidInput(
            "jobId",
            f"{job_id[:40]!r} starts with {RESERVED_ID_PREFIX!r}, which is reserved for "
            "tickwheel's own records (e.g. the timer's __partition__/N checkpoints); accepted: "
            f"an id not starting with {RESERVED_ID_PREFIX!r}",
        )
    return job_id


def _check_schedule(spec: Mapping[str, Any], count_from_ms: int) -> tuple[Schedule, int | None]:
    values = [spec.get(name) for name, _ in _SCHEDULE_FIELDS]
    # maxRuns without startAt counts from the job's creation (docs/schedules.md §3).
    count_from = (
        count_from_ms if spec.get("maxRuns") is not None and spec.get("startAt") is None else None
    )
    args = (spec.get("runAt"), count_from, *(freeze_specs(v) for v in values))
    if all(isinstance(v, str | int | tuple | None) and not isinstance(v, bool) for v in args):
        # A million jobs share a few thousand schedules: a timer's restore checks each once.
        return _cached_schedule(*args)
    return _parse_schedule(*args)


@lru_cache(maxsize=16_384)
def _cached_schedule(
    run_at: Any, count_from: int | None, *values: Any
) -> tuple[Schedule, int | None]:
    return _parse_schedule(run_at, count_from, *values)


def _parse_schedule(
    run_at: Any, count_from: int | None, *values: Any
) -> tuple[Schedule, int | None]:
    # Any: parse_schedule checks the types itself, naming the field.
    kwargs = {kw: thaw_specs(v) for (_, kw), v in zip(_SCHEDULE_FIELDS, values, strict=True)}
    if run_at is not None:
        if not isinstance(run_at, str):
            raise InvalidInput(
                "runAt", "accepted: an ISO 8601 instant with an offset, e.g. 2026-12-01T09:00:00Z"
            )
        run_at_ms = parse_instant_ms(run_at, "runAt") if kwargs["cron"] is None else None
        kwargs["dst_policy"] = None  # as before: a one-off's dstPolicy is not looked at
        return parse_schedule(run_at=run_at, **kwargs), run_at_ms
    return parse_schedule(count_from_ms=count_from, **kwargs), None


def _check_http_target(payload: object, allowed_networks: tuple[IPNetwork, ...]) -> None:
    url = payload.get("url") if isinstance(payload, dict) else None
    problem = url_problem(url, allowed_networks)
    if problem is not None:
        if "accepted:" not in problem:
            problem += (
                "; accepted: a host with a public address, or one in a network listed in "
                "TICKWHEEL_HTTP_ALLOWED_NETWORKS (cloud metadata never)"
            )
        raise InvalidInput("payload.url", problem)


@lru_cache(maxsize=16_384)
def _checked_template(template: str, timezone: str) -> dict[str, object]:
    """A template's check is the same for every job that shares it (restores check them all)."""
    return check_payload_template(template, timezone)


# The most slots one backfill command may ask for: a backfill is a deliberate, explicit range,
# not an open-ended replay (the SDK refuses more; the timer dead-letters a command that does).
MAX_BACKFILL = 10_000


def validate_definition(
    spec: object,
    now_ms: int,
    *,
    version: int = 1,
    created_at_ms: int | None = None,
    new_job_id: str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    allowed_networks: Iterable[IPNetwork] = (),
) -> JobDefinition:
    """A JSON job definition checked and turned into the Avro `JobDefinition` record.

    `new_job_id` is the id to give a definition without `jobId` (the caller makes it: the
    core draws no random numbers); without one, `jobId` is required. `allowed_networks` are
    the private networks an `http` job may target (`TICKWHEEL_HTTP_ALLOWED_NETWORKS`).
    Raises `InvalidInput` naming the field and what is accepted.
    """
    if not isinstance(spec, dict):
        raise InvalidInput("definition", "accepted: a JSON object")
    unknown = sorted(set(spec) - KNOWN_FIELDS, key=str)
    if unknown:
        raise InvalidInput(
            str(unknown[0]),
            f"unknown field; accepted fields are {', '.join(sorted(KNOWN_FIELDS))}",
        )
    job_type = spec.get("type")
    if not isinstance(job_type, str) or not job_type.strip() or len(job_type) > 100:
        raise InvalidInput(
            "type", "required; accepted: the job type a worker handles, e.g. 'noop' or 'http'"
        )
    job_id = check_job_id(spec.get("jobId") or new_job_id)
    payload = spec.get("payload", {})
    if not isinstance(payload, dict):
        raise InvalidInput("payload", f"a JSON {type(payload).__name__}; accepted: a JSON object")
    payload_text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    template = spec.get("payloadTemplate")
    if template is not None and not isinstance(template, str):
        raise InvalidInput(
            "payloadTemplate", "accepted: a string with {{ periodStart }}-style placeholders"
        )
    size = len(payload_text.encode()) + len((template or "").encode())
    if size > max_payload_bytes:
        raise InvalidInput(
            "payload",
            f"is {size} bytes with its template; accepted: at most {max_payload_bytes} bytes",
        )

    schedule, run_at_ms = _check_schedule(
        spec, created_at_ms if created_at_ms is not None else now_ms
    )
    rendered = None if template is None else _checked_template(template, schedule.timezone)
    if job_type == "http":
        _check_http_target(rendered if template is not None else payload, tuple(allowed_networks))

    priority = _one_of(spec, "priority", "normal", PRIORITIES)
    max_attempts = _int_in(spec, "maxAttempts", 3, 1, 100)
    misfire = _one_of(spec, "misfirePolicy", "catch_up", MISFIRE_POLICIES)
    overlap = _one_of(spec, "overlapPolicy", "allow", OVERLAP_POLICIES)
    max_catch_up = _int_in(spec, "maxCatchUp", 100, 1, 100_000)
    jitter_ms = _check_duration(spec, "jitter", "30s")
    if jitter_ms is not None:
        if jitter_ms > _MAX_JITTER_MS:
            raise InvalidInput("jitter", f"{spec['jitter']!r}; accepted: at most 1h")
        # Jitter must stay below the period, so it never reorders a job's own occurrences.
        default_jitter_window_ms(
            compile_schedule(schedule).nominal_period_ms, explicit_ms=jitter_ms
        )
    emi_ms = _check_duration(spec, "expectedMaxInterval", "26h")
    if emi_ms is not None and run_at_ms is None:
        # Shorter than the schedule's smallest gap, the watchdog would raise job_overdue
        # after every success: an alert that always fires is refused, not kept.
        period = compile_schedule(schedule).nominal_period_ms
        if period is not None and emi_ms < period:
            raise InvalidInput(
                "expectedMaxInterval",
                f"{spec['expectedMaxInterval']!r} is shorter than the schedule's "
                f"{period // 1000} s between runs, so it would always be overdue; "
                "accepted: at least the longest gap between two runs (e.g. '26h' for a daily job)",
            )
    max_run_ms = _check_duration(spec, "maxRunTime", "2h")
    if max_run_ms is not None and not MIN_RUN_MS <= max_run_ms <= MAX_RUN_MS:
        raise InvalidInput(
            "maxRunTime", f"{spec['maxRunTime']!r}; accepted: from 1s to 7d (e.g. '2h')"
        )
    check_min_run_time(spec, max_run_ms)
    review_by_ms = check_disable_account(spec)
    freshness = check_freshness(spec.get("freshness"))
    queue = spec.get("queue")
    if queue is not None and (not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue)):
        raise InvalidInput(
            "queue",
            f"{queue!r}; accepted: a queue name of 1 to 64 lowercase letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (workers serve it with --queue NAME)",
        )
    tenant = spec.get("tenantId", "default")
    if not isinstance(tenant, str) or not tenant or len(tenant) > 100:
        raise InvalidInput("tenantId", "accepted: a non-empty string of at most 100 characters")
    enabled = spec.get("enabled", True)
    if not isinstance(enabled, bool):
        raise InvalidInput("enabled", f"{enabled!r}; accepted: true or false")
    labels = spec.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise InvalidInput("labels", "accepted: an object of string values")
    idempotency_key = spec.get("idempotencyKey")
    if idempotency_key is not None and not isinstance(idempotency_key, str):
        raise InvalidInput("idempotencyKey", "accepted: a string")

    bounds = _record_bounds(schedule)
    adjustments = record_adjustments(spec, schedule)
    return {
        "jobId": job_id,
        "version": version,
        "type": job_type,
        "payload": payload_text,
        "payloadTemplate": template,
        "runAt": run_at_ms,
        "cron": spec.get("cron"),
        "timezone": schedule.timezone,
        "priority": priority,
        "maxAttempts": max_attempts,
        "idempotencyKey": idempotency_key,
        "expectedMaxInterval": spec.get("expectedMaxInterval"),
        "jitter": spec.get("jitter"),
        "misfirePolicy": misfire,
        "maxCatchUp": max_catch_up,
        "overlapPolicy": overlap,
        "dstPolicy": spec.get("dstPolicy"),
        "tenantId": tenant,
        "enabled": enabled,
        "createdAt": created_at_ms if created_at_ms is not None else now_ms,
        "updatedAt": now_ms,
        "labels": labels,
        "maxRunTime": spec.get("maxRunTime"),
        "minRunTime": spec.get("minRunTime"),
        # The DISABLE_TEXT_FIELDS, spelt out so mypy checks every key of the record.
        "disabledBy": spec.get("disabledBy"),
        "disabledOwner": spec.get("disabledOwner"),
        "disabledReason": spec.get("disabledReason"),
        "disabledReviewBy": review_by_ms,
        "freshness": freshness,
        "queue": None if queue == DEFAULT_QUEUE else queue,
        "every": spec.get("every"),
        "phase": bounds["phase"],
        "startAt": bounds["startAt"],
        "endAt": bounds["endAt"],
        "maxRuns": bounds["maxRuns"],
        "schedules": adjustments["schedules"],
        "exclude": adjustments["exclude"],
        "calendar": adjustments["calendar"],
        "businessDays": adjustments["businessDays"],
    }


def _record_bounds(schedule: Schedule) -> dict[str, int | None]:
    """The v3 instants as epoch ms (the record form), from the validated schedule."""
    b = schedule.bounds
    return {
        "phase": schedule.phase_ms if schedule.kind == "every" and schedule.phase_ms else None,
        "startAt": None if b is None else b.start_ms,
        "endAt": None if b is None else b.end_ms,
        "maxRuns": None if b is None else b.max_runs,
    }
