"""The scheduler's in-memory view of jobs: `JobEntry`, the compact form of a definition (a
million of them stay in memory), the schedule answers shared by jobs on one schedule, and
the predecessor rules (a deleted job's leftovers are not the new job's of the same id).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.jitter import default_jitter_window_ms
from tickwheel.core.misfire import MisfireWalk, walk_forward
from tickwheel.core.period import period_of
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.schedule import CompiledSchedule
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput
from tickwheel.records import ExecutionRequest, JobDefinition, Priority


@dataclass(slots=True)
class JobEntry:
    """The compact view of one definition that the timer keeps in memory."""

    job_id: str
    version: int
    job_type: str
    tenant_id: str
    priority: Priority
    payload: str
    payload_template: str | None
    max_attempts: int
    misfire_policy: str
    max_catch_up: int
    overlap_policy: str
    enabled: bool
    jitter_ms: int
    updated_at_ms: int
    created_at_ms: int
    schedule: CompiledSchedule
    one_off: bool
    timezone: str  # the job's zone: what a template's `| date` renders in
    max_run_seconds: int | None  # the job's `maxRunTime`, written into each request
    queue: str | None  # its named task queue (None: the default one), written into each request
    # The last slot taken off the grid (it may still wait in a tenant's ready queue) ...
    last_scheduled_ms: int | None = None
    # ... and the last slot emitted or recorded as skipped: what the timer state persists, so
    # a slot still waiting in memory is never lost by a crash.
    emitted_ms: int | None = None
    last_fire_ms: int | None = None
    # The next slot materialised, in the wheel (handle set) or parked beyond the horizon.
    next_ms: int | None = None
    handle: int | None = None
    entry: int = -1  # what `handle` carries in the wheel: dropped with it when unscheduled
    # The definition of a job that follows a calendar, kept to compile it again when the
    # calendar changes (services/timer/calendars.py); None for every other job.
    calendar_source: JobDefinition | None = None

    def same_as(self, other: JobEntry) -> bool:
        """Whether `other` came from the same definition record (a replay, not a new write)."""
        return (
            self.updated_at_ms == other.updated_at_ms
            and self.schedule == other.schedule
            and self.enabled == other.enabled
            and self.payload == other.payload
            and self.payload_template == other.payload_template
            and self.job_type == other.job_type
            and self.tenant_id == other.tenant_id
            and self.priority == other.priority
            and self.misfire_policy == other.misfire_policy
            and self.overlap_policy == other.overlap_policy
            and self.max_attempts == other.max_attempts
            and self.max_catch_up == other.max_catch_up
            and self.jitter_ms == other.jitter_ms
            and self.timezone == other.timezone
            and self.max_run_seconds == other.max_run_seconds
            and self.queue == other.queue
        )


@lru_cache(maxsize=262_144)
def shared_next_after(compiled: CompiledSchedule, t_ms: int) -> int | None:
    """The next slot after `t_ms`: a burst of jobs on one schedule asks it once per slot."""
    return compiled.next_after(t_ms)


def start_after(job: JobEntry) -> int:
    """The instant the job's walk resumes after: its last slot, or its creation (a job's
    first occurrence is its first slot strictly after it was created)."""
    if job.last_scheduled_ms is not None:
        return job.last_scheduled_ms
    if job.one_off:
        return min(job.created_at_ms, job.schedule.next_after(-1) or 0) - 1
    return job.created_at_ms


# The last (schedule, after, next) asked of `cohort_next_after`: a burst's jobs come due one
# cohort (jobs on one compiled schedule, due at one slot) after another. One tuple, read and
# replaced whole (a restore's thread asks too).
_LAST_NEXT: list[tuple[CompiledSchedule, int, int | None] | None] = [None]


def cohort_next_after(compiled: CompiledSchedule, t_ms: int) -> int | None:
    """`shared_next_after`, answered without hashing the schedule when the last question was
    the same (compiled schedules are shared objects: `is` finds the cohort, decision 0185)."""
    last = _LAST_NEXT[0]
    if last is not None and last[0] is compiled and last[1] == t_ms:
        return last[2]
    nxt = shared_next_after(compiled, t_ms)
    _LAST_NEXT[0] = (compiled, t_ms, nxt)
    return nxt


@lru_cache(maxsize=65_536)
def shared_walk(
    compiled: CompiledSchedule, start_ms: int, cutoff_ms: int, policy: str, max_catch_up: int
) -> MisfireWalk:
    """A catch-up's walk (frozen, so it can be shared): a restore's million jobs start from a
    few thousand (schedule, last slot) pairs, and each pair is walked once, not once a job."""
    return walk_forward(compiled, start_ms, cutoff_ms, policy, max_catch_up)


@lru_cache(maxsize=131_072)
def shared_period(compiled: CompiledSchedule, slot_ms: int) -> tuple[int, int]:
    """Periods are shared by every job on the same schedule and slot (a midnight burst of
    100,000 jobs asks for one period 100,000 times); finding the previous slot is the dear part."""
    return period_of(compiled, slot_ms)


@lru_cache(maxsize=1_024)
def _run_seconds(max_run_time: str | None) -> int | None:
    if not max_run_time:
        return None
    return max(1, parse_duration_ms(max_run_time, "maxRunTime") // 1000)


@lru_cache(maxsize=65_536)
def _jitter_window(period_ms: int | None, jitter: str | None) -> int:
    explicit = parse_duration_ms(jitter, "jitter") if jitter else None
    return default_jitter_window_ms(period_ms, explicit_ms=explicit)


def entry_from_definition(
    record: JobDefinition, calendars: Mapping[str, BusinessCalendar] | None = None
) -> JobEntry:
    """A JobDefinition record as a JobEntry, compiled with the holiday `calendars` known (the
    service's calendar book). The SDK validated it before publishing, but any Kafka client
    with the schema can publish: what would break a decision is refused here."""
    if not 1 <= record["maxAttempts"] <= 100:
        raise InvalidInput("maxAttempts", f"{record['maxAttempts']}; accepted: 1 to 100")
    if record["maxCatchUp"] < 0:
        raise InvalidInput("maxCatchUp", f"{record['maxCatchUp']}; accepted: 0 or more")
    one_off = record.get("runAt") is not None
    # One function for every kind (cron, interval, one-off, bounded, several specs, calendars),
    # shared with the SDK; it refuses a record without exactly one of runAt, cron or every.
    follows_calendar = record.get("calendar") is not None or record.get("businessDays") is not None
    compiled = compile_record_schedule(record, (calendars or {}) if follows_calendar else None)
    jitter = _jitter_window(compiled.nominal_period_ms, record.get("jitter"))
    created_at, updated_at = record["createdAt"], record["updatedAt"]
    if updated_at == created_at:
        updated_at = created_at  # one int object for both: a never-edited job (32 bytes a job)
    # Interned: a million jobs share a handful of types, tenants and policies (memory per job).
    return JobEntry(
        job_id=record["jobId"],
        version=record["version"],
        job_type=sys.intern(record["type"]),
        tenant_id=sys.intern(record["tenantId"]),
        priority=record["priority"],  # a Literal: one of three interned strings already
        payload=record["payload"],
        payload_template=record.get("payloadTemplate"),
        max_attempts=record["maxAttempts"],
        misfire_policy=sys.intern(record["misfirePolicy"]),
        max_catch_up=record["maxCatchUp"],
        overlap_policy=sys.intern(record["overlapPolicy"]),
        enabled=record["enabled"],
        jitter_ms=jitter,
        updated_at_ms=updated_at,
        created_at_ms=created_at,
        schedule=compiled,
        one_off=one_off,
        timezone=sys.intern(record.get("timezone") or "UTC"),
        max_run_seconds=_run_seconds(record.get("maxRunTime")),
        queue=record.get("queue"),
        calendar_source=record if follows_calendar else None,
    )


# Clocks of the producer (createdAt) and of the timer (updated_at) may disagree this much.
CLOCK_SKEW_MS = 300_000


def state_of_a_predecessor(state: dict[str, Any], job: JobEntry) -> bool:
    """A state left by a predecessor: a deleted job of the same id (deleted and re-created while nobody
    owned the partition): more versions than the definition, or older than its creation."""
    version = int(state.get("job_version") or 0)
    updated_at = int(state.get("updated_at") or job.created_at_ms)
    return version > job.version or updated_at < job.created_at_ms - CLOCK_SKEW_MS


def request_of_a_predecessor(request: ExecutionRequest, job: JobEntry) -> bool:
    """A request of a predecessor: a deleted job of the same id (deleted and re-created while nobody owned
    the partition): of a version this job never had, for a slot before this job existed (a
    cron job's first slot is strictly after its creation), or requested long before."""
    if request["job_version"] > job.version:
        return True
    scheduled = request["trigger"] in ("scheduled", "catch_up")
    if scheduled and not job.one_off and request["scheduled_time"] <= job.created_at_ms:
        return True
    return bool(request["requested_at"] < job.created_at_ms - CLOCK_SKEW_MS)
