"""Bounded schedules: `startAt`, `endAt` and `maxRuns` around any recurring schedule.

The slots of a bounded schedule are the base schedule's slots in [start, end], and of
those the first `max_runs` (docs/schedules.md §3). Slots outside do not exist: every
method answers as if the base schedule had none there, so the misfire walk, periods and
preview need no special case. `maxRuns` is turned into one more end (the instant of the
last run) once, at construction, by a bounded gallop over `count`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.errors import InvalidSchedule, OutOfRange
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.core.zones import MAX_INSTANT_S, MIN_INSTANT_S, check_instant_s
from tickwheel.errors import InvalidInput

__all__ = [
    "MAX_RUNS",
    "CompiledBounded",
    "ScheduleBounds",
    "parse_bounds",
    "parse_instant_field",
]

MAX_RUNS = 100_000
_MIN_MS, _MAX_MS = MIN_INSTANT_S * 1000, MAX_INSTANT_S * 1000


@dataclass(frozen=True, slots=True)
class ScheduleBounds:
    """startAt/endAt as epoch ms (inclusive), maxRuns, and where maxRuns counts from
    when there is no startAt (`count_from_ms`: the job's creation)."""

    start_ms: int | None
    end_ms: int | None
    max_runs: int | None
    count_from_ms: int | None = None


def parse_instant_field(value: object, field: str) -> int | None:
    """An ISO 8601 instant with offset as epoch ms (None stays None); `InvalidSchedule`."""
    if value is None:
        return None
    try:
        ms = parse_iso_ms(value, field)
        check_instant_s(ms // 1000)
    except OutOfRange:
        raise InvalidSchedule(
            field, f"{value!r} is out of range; accepted: 1900-01-01 to 9000-01-01"
        ) from None
    except InvalidInput as exc:
        raise InvalidSchedule(field, exc.message) from None
    return ms


def parse_bounds(
    start_at: object, end_at: object, max_runs: object, count_from_ms: int | None
) -> ScheduleBounds | None:
    """Validate startAt/endAt (ISO instants with offset) and maxRuns; None when all absent."""
    if (start_at, end_at, max_runs) == (None, None, None):
        return None
    start_ms, end_ms = (
        parse_instant_field(start_at, "startAt"),
        parse_instant_field(end_at, "endAt"),
    )
    if start_ms is not None and end_ms is not None and end_ms < start_ms:
        raise InvalidSchedule(
            "endAt", f"{end_at!r} is before startAt {start_at!r}; accepted: an end after the start"
        )
    if max_runs is not None and (
        not isinstance(max_runs, int) or isinstance(max_runs, bool) or not 1 <= max_runs <= MAX_RUNS
    ):
        raise InvalidSchedule("maxRuns", f"{max_runs!r}; accepted: an integer from 1 to {MAX_RUNS}")
    from_ms = count_from_ms if max_runs is not None and start_ms is None else None
    return ScheduleBounds(start_ms, end_ms, max_runs, from_ms)


class CompiledBounded(CompiledSchedule):
    """`base` restricted to slots in [start_ms, end_ms], the first `max_runs` of them."""

    __slots__ = ("base", "end_ms", "key", "last_ms", "max_runs", "start_ms")

    def __init__(
        self,
        base: CompiledSchedule,
        start_ms: int | None = None,
        end_ms: int | None = None,
        max_runs: int | None = None,
    ) -> None:
        self.base = base
        self.start_ms = _MIN_MS if start_ms is None else max(start_ms, _MIN_MS)
        self.end_ms = _MAX_MS if end_ms is None else min(end_ms, _MAX_MS)
        self.max_runs = max_runs
        kind, a, b = base.key
        self.key = (f"bounded-{kind}", a, f"{b}|{start_ms}|{end_ms}|{max_runs}")
        # The instant of the last slot that exists (None: none does).
        self.last_ms = self._last_slot()

    def _last_slot(self) -> int | None:
        lo, hi = self._floor, self.end_ms
        if self.max_runs is None:
            return self.base.prev_before(hi + 1) if hi >= self.start_ms else None
        period = self.base.nominal_period_ms or 1000
        # Gallop: a window holding max_runs slots, doubled a bounded number of times
        # (at most ~60: each doubling at least doubles the window up to the range's end).
        width = max(period * self.max_runs * 2, 1000)
        while True:
            stop = min(lo + width, hi)
            if self.base.count(lo, stop) >= self.max_runs or stop >= hi:
                break
            width *= 2
        found = self.base.kth_after(lo, self.max_runs, stop)
        if found is None:  # fewer than max_runs slots before the end: the end decides
            return self.base.prev_before(hi + 1) if hi >= self.start_ms else None
        return found

    @property
    def _floor(self) -> int:
        """Searches start just before start_ms, but never before the supported range
        (a slot at the range's very first millisecond is not one anyone schedules)."""
        return max(self.start_ms - 1, _MIN_MS)

    def _clip(self, start_ms: int, end_ms: int) -> tuple[int, int] | None:
        if self.last_ms is None:
            return None
        lo, hi = max(start_ms, self._floor), min(end_ms, self.last_ms)
        return (lo, hi) if lo < hi else None

    def next_after(self, t_ms: int) -> int | None:
        if self.last_ms is None or t_ms >= self.last_ms:
            return None
        nxt = self.base.next_after(max(t_ms, self._floor))
        return nxt if nxt is not None and nxt <= self.last_ms else None

    def period_start_before(self, slot_ms: int) -> int | None:
        # The first slot after startAt covers its grid period, not an empty one.
        return self.base.prev_before(slot_ms)

    def prev_before(self, t_ms: int) -> int | None:
        if self.last_ms is None or t_ms <= self.start_ms:
            return None
        prev = self.base.prev_before(min(t_ms, self.last_ms + 1))
        return prev if prev is not None and prev >= self.start_ms else None

    def count(self, start_ms: int, end_ms: int) -> int:
        window = self._clip(start_ms, end_ms)
        return 0 if window is None else self.base.count(*window)

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        window = self._clip(start_ms, end_ms)
        return [] if window is None else self.base.occurrences(*window)

    def kth_after(self, start_ms: int, k: int, end_ms: int) -> int | None:
        window = self._clip(start_ms, end_ms)
        return None if window is None else self.base.kth_after(window[0], k, window[1])

    @property
    def nominal_period_ms(self) -> int | None:
        return self.base.nominal_period_ms
