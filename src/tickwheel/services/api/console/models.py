"""The console's page view-models: pure functions from records to what a page shows.

No I/O and no clock (`now_ms` is an argument), so the rules behind a status chip or a grid
cell are unit-tested without a broker, a history store or a browser (decision 0065).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any
from zoneinfo import ZoneInfo

from tickwheel.core.calendars import BusinessCalendar
from tickwheel.core.describe import describe
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.preview import PreviewRow, preview_schedule
from tickwheel.core.record_schedule import compile_record_schedule, record_schedule
from tickwheel.core.timefmt import format_local, format_utc
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput
from tickwheel.history._audit import AuditedWindow
from tickwheel.services.api.console.svg import Slot

#: The chips of the jobs page, in the order "problems first" sorts them.
STATUSES = ("broken", "overdue", "late", "disabled", "paused", "ok")
#: Where a pause's reason is kept (the API's `PAUSE_REASON_LABEL`; the same label).
PAUSE_REASON_LABEL = "tickwheel/paused-reason"
#: A fired slot whose request left later than this after its fire time is drawn `late`.
LATE_AFTER_MS = 60_000
#: The watchdog's kinds that make a job `overdue` or `broken` while open.
OVERDUE_KINDS = ("job_overdue",)
BROKEN_KINDS = ("broken_chain",)


#: What an execution's page offers a retry for (a running one is cancelled, not retried).
RETRYABLE_STATUSES = ("dead_lettered", "failed", "cancelled")


class _Unset:
    pass


UNSET = _Unset()


@dataclass(frozen=True)
class JobOutcome:
    """What the history says of a job's executions (the console's `job_outcomes` query)."""

    last_outcome: str | None = None
    last_outcome_ms: int | None = None
    last_success_ms: int | None = None


@dataclass
class JobRow:
    """One line of the jobs page."""

    job_id: str
    version: int
    job_type: str
    tenant_id: str
    schedule: str
    timezone: str
    next_utc: str | None
    next_local: str | None
    last_outcome: str | None
    since_success: str | None
    expected_max_interval: str | None
    status: str
    status_reason: str
    owner: str | None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return STATUSES.index(self.status)


def approx_duration(ms: int) -> str:
    """`ms` for a person: the two largest units, e.g. `3h 12m`, `45s`, `2d 1h`."""
    seconds = max(ms, 0) // 1000
    units = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        if seconds >= size or (name == "s" and not parts):
            parts.append(f"{seconds // size}{name}")
            seconds %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


# The holiday calendars by name, as the timer follows them (None: weekends only): a job on a
# business-day rule shows the slots the timer fires, not the ones its cron alone names.
Calendars = Mapping[str, BusinessCalendar] | None


def _next_ms(record: Mapping[str, Any], now_ms: int, calendars: Calendars = None) -> int | None:
    if record.get("runAt") is not None:
        run_at: int = record["runAt"]
        return run_at if run_at > now_ms else None
    try:
        return compile_record_schedule(dict(record), calendars).next_after(now_ms)
    except (InvalidSchedule, InvalidInput, ValueError):
        return None


def _interval_ms(record: Mapping[str, Any]) -> int | None:
    text = record.get("expectedMaxInterval")
    if not text:
        return None
    try:
        return parse_duration_ms(str(text), "expectedMaxInterval")
    except InvalidInput:
        return None


def job_status(
    record: Mapping[str, Any],
    outcome: JobOutcome,
    now_ms: int,
    open_alert_kinds: Iterable[str] = (),
    next_ms: int | _Unset | None = UNSET,
) -> tuple[str, str]:
    """(chip, why) for a job; the rules are decision 0065's.

    paused: disabled with a reason; disabled: disabled without one; broken: an enabled
    recurring job with no future slot (or an open broken-chain alert); overdue: no success
    within `expectedMaxInterval` (or an open overdue alert); late: its last outcome failed or
    was dead-lettered; ok otherwise.
    """
    kinds = set(open_alert_kinds)
    labels = record.get("labels") or {}
    if not record.get("enabled", True):
        reason = labels.get(PAUSE_REASON_LABEL)
        return ("paused", f"paused: {reason}") if reason else ("disabled", "disabled")
    recurring = record.get("runAt") is None
    nxt = _next_ms(record, now_ms) if isinstance(next_ms, _Unset) else next_ms
    if kinds & set(BROKEN_KINDS) or (recurring and nxt is None):
        return "broken", "enabled, but no future occurrence"
    interval = _interval_ms(record)
    if kinds & set(OVERDUE_KINDS):
        return "overdue", "the watchdog has an open alert"
    if interval is not None and recurring:
        since = outcome.last_success_ms
        anchor = since if since is not None else int(record.get("createdAt") or now_ms)
        if now_ms - anchor > interval:
            what = "no success since creation" if since is None else "last success"
            ago = approx_duration(now_ms - anchor)
            return "overdue", f"{what} {ago} ago, over {record['expectedMaxInterval']}"
    if outcome.last_outcome in ("failed", "dead_lettered"):
        return "late", f"last outcome {outcome.last_outcome}"
    return "ok", "ok"


#: The fields a definition's schedule is made of (what `record_schedule` reads): jobs that
#: agree on them share their next slot and their words, so a page computes each schedule once.
SCHEDULE_FIELDS = (
    "cron",
    "timezone",
    "dstPolicy",
    "runAt",
    "every",
    "phase",
    "startAt",
    "endAt",
    "maxRuns",
    "schedules",
    "exclude",
    "calendar",
    "businessDays",
)


def schedule_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a record's schedule depends on (createdAt only where maxRuns counts from it)."""
    key = tuple(map(record.get, SCHEDULE_FIELDS))
    try:
        hash(key)  # most jobs: plain text and numbers, used as they are (10,000 on a page)
    except TypeError:  # a list or mapping (several specs, exclusions): compared by its text
        key = tuple(v if v is None or isinstance(v, str | int) else repr(v) for v in key)
    return (*key, record.get("createdAt")) if record.get("maxRuns") is not None else key


@dataclass(frozen=True, slots=True)
class ScheduleFacts:
    next_ms: int | None
    next_utc: str | None
    next_local: str | None
    words: str


ScheduleMemo = dict[tuple[Any, ...], ScheduleFacts]


def _schedule_facts(
    record: Mapping[str, Any], now_ms: int, memo: ScheduleMemo | None, calendars: Calendars
) -> ScheduleFacts:
    key = schedule_key(record) if memo is not None else ()
    if memo is not None and key in memo:
        return memo[key]
    try:
        words = describe(record_schedule(dict(record)))
    except (InvalidSchedule, InvalidInput, ValueError):
        words = str(record.get("cron") or record.get("every") or "?")
    nxt = _next_ms(record, now_ms, calendars)
    zone = ZoneInfo(str(record.get("timezone") or "UTC"))
    facts = ScheduleFacts(
        nxt,
        format_utc(nxt) if nxt is not None else None,
        format_local(nxt, zone) if nxt is not None else None,
        words,
    )
    if memo is not None:
        memo[key] = facts
    return facts


def job_row(
    record: Mapping[str, Any],
    outcome: JobOutcome,
    now_ms: int,
    open_alert_kinds: Iterable[str] = (),
    memo: ScheduleMemo | None = None,
    calendars: Calendars = None,
) -> JobRow:
    """One line of the jobs page; `memo` shares schedule work between the rows of a page."""
    zone = str(record.get("timezone") or "UTC")
    facts = _schedule_facts(record, now_ms, memo, calendars)
    status, why = job_status(record, outcome, now_ms, open_alert_kinds, facts.next_ms)
    labels = dict(record.get("labels") or {})
    since = None
    if outcome.last_success_ms is not None:
        since = approx_duration(now_ms - outcome.last_success_ms)
    return JobRow(
        job_id=str(record["jobId"]),
        version=int(record["version"]),
        job_type=str(record.get("type")),
        tenant_id=str(record.get("tenantId") or "default"),
        schedule=facts.words,
        timezone=zone,
        next_utc=facts.next_utc,
        next_local=facts.next_local,
        last_outcome=outcome.last_outcome,
        since_success=since,
        expected_max_interval=record.get("expectedMaxInterval"),
        status=status,
        status_reason=why,
        owner=labels.get("owner"),
        labels=labels,
    )


def filter_rows(
    rows: Sequence[JobRow], query: str = "", status: str = "", tenant: str = ""
) -> list[JobRow]:
    """Rows whose id, type, schedule, owner or labels contain `query` (any case), with the
    chip `status` and of the `tenant` if given; problems first, then by id."""
    needle = query.strip().lower()

    def matches(row: JobRow) -> bool:
        if (status and row.status != status) or (tenant and row.tenant_id != tenant):
            return False
        if not needle:
            return True
        haystack = [row.job_id, row.job_type, row.schedule, row.owner or "", row.tenant_id]
        haystack += [f"{k}={v}" for k, v in row.labels.items()]
        return any(needle in text.lower() for text in haystack)

    return sorted((r for r in rows if matches(r)), key=lambda r: (r.rank, r.job_id))


def next_occurrences(
    record: Mapping[str, Any], now_ms: int, count: int = 10, calendars: Calendars = None
) -> list[PreviewRow]:
    """The next `count` slots as the timer fires them (before jitter), with DST notes and the
    calendar's moves: every spec, exclusion and business-day rule the definition holds."""
    if record.get("runAt") is not None:
        return []
    try:
        return preview_schedule(record_schedule(dict(record)), now_ms, count, calendars)
    except (InvalidSchedule, InvalidInput, ValueError):
        return []


def grid_slots(audit: AuditedWindow, late_after_ms: int = LATE_AFTER_MS) -> list[Slot]:
    """The audit's occurrences (`tickwheel.history` `audit_window`, the values behind
    `schedule_audit`) as grid cells: a fired slot is `failed` when dead-lettered, `late` when
    its request left over `late_after_ms` after its fire time; a slot with no `requested`
    event stays `missing`."""
    # A month of a per-minute job is 43,200 rows: each Slot is made by tuple.__new__ (a
    # NamedTuple's own __new__ is one more Python call a slot).
    make, cls = tuple.__new__, Slot
    slots: list[Slot] = []
    add = slots.append
    for row in audit.slots:
        status = row.status
        if status == "fired":
            if row.outcome == "dead_lettered":
                status = "failed"
            elif (row.lateness_ms or 0) > late_after_ms:
                status = "late"
        add(make(cls, (row.slot_ms, status, row.execution_id)))
    return slots


def status_counts(slots: Iterable[Slot]) -> dict[str, int]:
    counts = dict.fromkeys(("fired", "late", "failed", "skipped", "paused", "missing"), 0)
    counts.update(Counter(map(itemgetter(1), slots)))
    return counts


#: Fields of a recorded definition a version diff leaves out: they change on every version.
_NOISE = ("version", "updatedAt", "createdAt")


def version_diffs(versions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each recorded version (rows of `job_definition_versions`, oldest first) with what it
    changed from the one before: `(field, before, after)` triples; newest first."""
    out: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    for row in versions:
        try:
            definition = json.loads(row.get("definition") or "{}")
        except ValueError:
            definition = {}
        if not isinstance(definition, dict):
            definition = {}
        if row.get("deleted"):
            definition = {}
        changes = [
            (name, previous.get(name), definition.get(name))
            for name in sorted(set(previous) | set(definition))
            if name not in _NOISE and previous.get(name) != definition.get(name)
        ]
        if not out:
            changes = []  # the first version is the whole definition, shown below it
        out.append(
            {
                "version": row.get("version"),
                "at": str(row.get("event_time")),
                "deleted": bool(row.get("deleted")),
                "changes": changes,
            }
        )
        previous = definition
    return list(reversed(out))


def require_reason(reason: str | None) -> str:
    """A pause or bulk action's reason: required, a few words (refused with one line)."""
    text = (reason or "").strip()
    if not text:
        raise InvalidInput("reason", "required; accepted: a few words on why (1-500 characters)")
    if len(text) > 500:
        raise InvalidInput("reason", f"{len(text)} characters; accepted: 1-500")
    return text


_INSTANTS = ("runAt", "phase", "startAt", "endAt", "createdAt", "updatedAt")


def definition_view(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The stored definition as (field, text) pairs, instants in UTC, unset fields left out."""
    out: list[tuple[str, str]] = []
    for name, value in record.items():
        if value is None or value == {} or name in ("jobId",):
            continue
        if name in _INSTANTS and isinstance(value, int):
            text = format_utc(value)
        elif isinstance(value, dict):
            text = json.dumps(value, sort_keys=True)
        else:
            text = str(value)
        out.append((name, text))
    return out
