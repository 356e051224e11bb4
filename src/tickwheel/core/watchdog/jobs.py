"""What the watchdog knows of a job's definition, and the interval it is held to.

The schedule is recompiled here from the definition with the core's own schedule code, never
taken from the timer: the watchdog and the timer can only agree about what was owed because
they run the same code, not because one believes the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

from tickwheel.core.bounds import CompiledBounded
from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.jitter import default_jitter_window_ms
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.schedule import CompiledSchedule
from tickwheel.core.watchdog.fields import Freshness, parse_freshness
from tickwheel.core.zones import zone_timeline
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import TickwheelError
from tickwheel.records import JobDefinition

DAY_MS = 86_400_000
# How far ahead the schedule is scanned for its largest gap, and how many slots at most.
GAP_SCAN_MS = 400 * DAY_MS
GAP_SCAN_SLOTS = 2_000
# A derived interval's floor of slack for the run itself (or half the gap, if larger).
DEFAULT_GRACE_MS = 60_000
# Definition versions remembered per job: enough to find the last resume.
VERSIONS_KEPT = 32


@dataclass(frozen=True, slots=True)
class JobProfile:
    """What a definition says that many jobs say alike (type, schedule, limits, a
    disable's account): one shared object per distinct profile, so a million jobs on a few
    thousand schedules hold a few thousand of these (decision 0106)."""

    job_type: str
    priority: str
    enabled: bool
    schedule: CompiledSchedule | None  # None: a one-off, or a schedule that does not compile
    recurring: bool
    timezone: str
    jitter_ms: int
    expected_max_interval_ms: int | None  # as declared; None when absent or unreadable
    # A bounded schedule (startAt/endAt/maxRuns): its first allowed instant, and its last
    # slot (None: no slot exists at all). An unbounded one has neither.
    starts_at_ms: int | None = None
    bounded: bool = False
    last_slot_ms: int | None = None
    # How long one attempt should take: `maxRunTime` / `minRunTime` as declared (None: unset).
    max_run_ms: int | None = None
    min_run_ms: int | None = None
    # A disable's account of itself (`disabledBy`, `disabledOwner`, `disabledReason`,
    # `disabledReviewBy`): who did it, who answers for it, why, and when to look again.
    disabled_by: str | None = None
    disabled_owner: str | None = None
    disabled_reason: str | None = None
    review_by_ms: int | None = None
    freshness: Freshness | None = None  # an output freshness check (`freshness`)
    # The holiday calendar the schedule follows (`calendar`, or `businessDays` alone: ""),
    # None for a schedule that follows none: what a calendar's change recompiles.
    calendar: str | None = None
    # A schedule that follows a calendar, compiled with weekends only: what its interval
    # was checked against at create (decision 0107). None for every other schedule.
    unadjusted: CompiledSchedule | None = None


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One version of a job's definition, as the watchdog needs it: the few fields each job
    has of its own, and its shared `JobProfile` (its fields read through)."""

    job_id: str
    version: int
    created_at_ms: int
    updated_at_ms: int
    # Not in the profile: tenants times schedules would leave few jobs sharing one.
    tenant_id: str
    profile: JobProfile

    @property
    def job_type(self) -> str:
        return self.profile.job_type

    @property
    def priority(self) -> str:
        return self.profile.priority

    @property
    def enabled(self) -> bool:
        return self.profile.enabled

    @property
    def schedule(self) -> CompiledSchedule | None:
        return self.profile.schedule

    @property
    def recurring(self) -> bool:
        return self.profile.recurring

    @property
    def timezone(self) -> str:
        return self.profile.timezone

    @property
    def jitter_ms(self) -> int:
        return self.profile.jitter_ms

    @property
    def expected_max_interval_ms(self) -> int | None:
        return self.profile.expected_max_interval_ms

    @property
    def starts_at_ms(self) -> int | None:
        return self.profile.starts_at_ms

    @property
    def bounded(self) -> bool:
        return self.profile.bounded

    @property
    def last_slot_ms(self) -> int | None:
        return self.profile.last_slot_ms

    @property
    def max_run_ms(self) -> int | None:
        return self.profile.max_run_ms

    @property
    def min_run_ms(self) -> int | None:
        return self.profile.min_run_ms

    @property
    def disabled_by(self) -> str | None:
        return self.profile.disabled_by

    @property
    def disabled_owner(self) -> str | None:
        return self.profile.disabled_owner

    @property
    def disabled_reason(self) -> str | None:
        return self.profile.disabled_reason

    @property
    def review_by_ms(self) -> int | None:
        return self.profile.review_by_ms

    @property
    def freshness(self) -> Freshness | None:
        return self.profile.freshness

    def finished(self, watermark: int) -> bool:
        """A bounded job whose last slot has come (or that has none): it owes nothing more."""
        profile = self.profile
        return profile.bounded and (
            profile.last_slot_ms is None or profile.last_slot_ms <= watermark
        )


def job_spec(
    job_id: str,
    record: JobDefinition,
    calendars: Mapping[str, BusinessCalendar] | None = None,
) -> JobSpec | None:
    """The spec of a decoded `JobDefinition` record, or None if it is not one at all.

    `calendars`: the holiday calendars known (by name), as the timer compiles the same record
    with them; None compiles with weekends only (how validation sees a calendar).

    A record whose schedule does not compile still yields a spec (its job exists and owes
    nothing the watchdog can compute): the timer dead-letters such records, the watchdog
    stays silent about them rather than guess.
    """
    try:
        version = int(record["version"])
        created = int(record["createdAt"])
        updated = int(record["updatedAt"])
        job_type = str(record["type"])
        tenant = str(record["tenantId"])
    except (KeyError, TypeError, ValueError):
        return None
    profile = job_profile(record, job_type, calendars)
    # One int object for both when they are equal (a job never edited): 32 B saved per job.
    updated = created if updated == created else updated
    return JobSpec(job_id, version, created, updated, tenant, profile)


def job_profile(
    record: JobDefinition,
    job_type: str,
    calendars: Mapping[str, BusinessCalendar] | None,
) -> JobProfile:
    compiled = _compiled(record, calendars)
    recurring = record.get("runAt") is None and compiled is not None
    jitter_ms = _jitter_ms(compiled, record.get("jitter")) if recurring else 0
    start = record.get("startAt")
    calendar = record.get("calendar")
    follows = calendar is not None or record.get("businessDays") is not None
    return JobProfile(
        job_type=job_type,
        priority=str(record.get("priority") or "normal"),
        enabled=bool(record.get("enabled", True)),
        schedule=compiled,
        recurring=recurring,
        timezone=str(record.get("timezone") or "UTC"),
        jitter_ms=jitter_ms,
        expected_max_interval_ms=_duration(record.get("expectedMaxInterval")),
        starts_at_ms=_instant(start),
        bounded=isinstance(compiled, CompiledBounded),
        last_slot_ms=compiled.last_ms if isinstance(compiled, CompiledBounded) else None,
        max_run_ms=_duration(record.get("maxRunTime")),
        min_run_ms=_duration(record.get("minRunTime")),
        disabled_by=_text(record.get("disabledBy")),
        disabled_owner=_text(record.get("disabledOwner")),
        disabled_reason=_text(record.get("disabledReason")),
        review_by_ms=_instant(record.get("disabledReviewBy")),
        freshness=parse_freshness(record.get("freshness")),
        calendar=(str(calendar) if calendar is not None else "") if follows else None,
        unadjusted=_compiled(record, None) if follows and recurring else None,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _instant(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _compiled(
    record: Mapping[str, Any], calendars: Mapping[str, BusinessCalendar] | None
) -> CompiledSchedule | None:
    """The timer's own schedule of the record (cron or interval, bounds, calendars and all),
    shared through its cache; None for a record whose schedule does not compile."""
    try:
        return compile_record_schedule(record, calendars)
    except (TickwheelError, ValueError, TypeError):
        return None


def _duration(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        ms = parse_duration_ms(value, "expectedMaxInterval")
    except TickwheelError:
        return None
    return ms if ms > 0 else None


def _jitter_ms(compiled: CompiledSchedule | None, jitter: object) -> int:
    period = compiled.nominal_period_ms if compiled is not None else None
    explicit = _duration(jitter) if isinstance(jitter, str) else None
    if jitter == "0s" or jitter == "0":
        explicit = 0
    try:
        return default_jitter_window_ms(period, explicit_ms=explicit)
    except TickwheelError:
        return default_jitter_window_ms(period)


@dataclass(frozen=True, slots=True)
class Interval:
    """The longest a job may go without a success; `derived` when the definition gave none."""

    ms: int
    derived: bool


def effective_interval(spec: JobSpec, grace_ms: int = DEFAULT_GRACE_MS) -> Interval | None:
    """`expectedMaxInterval` if declared, else the schedule's largest gap (plus the largest
    DST shift of its zone, its jitter window and a grace); None for what owes nothing."""
    return profile_interval(spec.profile, spec.created_at_ms, grace_ms)


# Month-wide buckets keep the cache small: jobs created the same month share an answer (a
# derived interval depends on the job only through createdAt // BUCKET_MS).
BUCKET_MS = 30 * DAY_MS


def profile_interval(
    profile: JobProfile, created_at_ms: int, grace_ms: int = DEFAULT_GRACE_MS
) -> Interval | None:
    """`effective_interval` of a job with `profile` created at `created_at_ms`: the same
    answer for every job of a profile created in the same `BUCKET_MS`."""
    schedule = profile.schedule
    if not profile.recurring or schedule is None:
        return None
    if profile.expected_max_interval_ms is not None:
        return Interval(profile.expected_max_interval_ms, derived=False)
    bucket = created_at_ms // BUCKET_MS * BUCKET_MS
    # A bounded schedule's gaps are its base schedule's: the bounds only cut slots off.
    base = schedule.base if isinstance(schedule, CompiledBounded) else schedule
    gap = largest_gap_ms(base, bucket)
    if gap is None:
        return None
    shift = largest_dst_shift_ms(profile.timezone, bucket)
    return Interval(gap + shift + profile.jitter_ms + max(grace_ms, gap // 2), derived=True)


@lru_cache(maxsize=65_536)
def largest_gap_ms(schedule: CompiledSchedule, from_ms: int) -> int | None:
    """The largest distance between consecutive occurrences after `from_ms` (bounded scan)."""
    slots = schedule.first(from_ms, from_ms + GAP_SCAN_MS, GAP_SCAN_SLOTS)
    if len(slots) < 2:
        return None
    return max(b - a for a, b in pairwise(slots))


@lru_cache(maxsize=4_096)
def largest_dst_shift_ms(timezone: str, from_ms: int) -> int:
    """The largest offset change of `timezone` within the gap scan's window (0 for UTC)."""
    try:
        timeline = zone_timeline(timezone)
    except (TickwheelError, ValueError, KeyError):
        return 0
    cursor, end = from_ms // 1000, (from_ms + GAP_SCAN_MS) // 1000
    shift = 0
    # A zone changes offset a few times a year: a bounded walk over its segments.
    for _ in range(64):
        if cursor >= end:
            break
        segment = timeline.segment(cursor)
        shift = max(shift, abs(segment.offset_after - segment.offset))
        if segment.end <= cursor:
            break
        cursor = segment.end
    return shift * 1000
