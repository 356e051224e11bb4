"""Adjusted schedules: a job's slots with its exclusions removed and its business-day rule
applied, in the job's zone (docs/schedules.md §4, §5; decision 0078).

For a base slot on local day `d`: the slot is gone if `d` is an excluded date or a cron
exclusion names its local time; otherwise the rule decides its day — `d` itself when `d` is
a business day, else none (`skip`), the next business day (`next`) or the previous one
(`previous`), at most `MAX_MOVE_DAYS` away. A moved slot keeps its local wall time on the
new day, resolved as a fixed-time cron is (a time in a gap fires at the end of the gap, a
repeated time at its earlier instant). Slots moved onto one instant are one slot.

Searches go day by day, not slot by slot: each day with a base slot costs one base search,
and a day's slots are only walked where they are moved or excluded.
"""

from __future__ import annotations

from typing import TypeVar

from tickwheel.core.calendars import MAX_MOVE_DAYS, BusinessCalendar, ScheduleAdjustment
from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.compiled_cron import CompiledCron
from tickwheel.core.enumerated import EnumeratedSchedule, probe_min_gap_ms
from tickwheel.core.wallclock import DAY_S, WallMatcher
from tickwheel.core.zones import MAX_INSTANT_S, MIN_INSTANT_S, zone_timeline

__all__ = ["CompiledAdjusted"]

_DAY_MS = DAY_S * 1000
_MIN_MS, _MAX_MS = MIN_INSTANT_S * 1000, MAX_INSTANT_S * 1000
# A moved time can land up to an offset change away from where the day's shift puts it.
_DST_MARGIN_MS = 3 * 3_600_000
# Days with slots looked at by one search before it gives up (a job whose every slot is
# excluded for 400 years fires no more: bounded, like every search in the core).
_MAX_DAYS_SCANNED = 150_000
_MAX_SLOTS_SCANNED = 200_000
_NO_DAY = 1 << 62
_DAYS_CACHED = 256  # per schedule: thousands of calendar schedules stay small
_UNKNOWN = object()
K = TypeVar("K")
V = TypeVar("V")


def _remember(cache: dict[K, V], key: K, value: V) -> V:
    """Keep `value` in one of a schedule's small caches, emptied whenever it is full."""
    if len(cache) >= _DAYS_CACHED:
        cache.clear()
    cache[key] = value
    return value


class CompiledAdjusted(EnumeratedSchedule):
    """`base` with `adjustment` applied in `zone`, business days from `calendar`."""

    __slots__ = (
        "_clean_days",
        "_excluders",
        "_exclusions",
        "_landings",
        "_lands_directly",
        "_moves",
        "_period",
        "_slot_days",
        "_starts",
        "_successors",
        "_targets",
        "_uniform",
        "adjustment",
        "base",
        "calendar",
        "key",
        "rule",
        "timeline",
    )

    def __init__(
        self,
        base: CompiledSchedule,
        zone: str,
        adjustment: ScheduleAdjustment,
        calendar: BusinessCalendar | None,
    ) -> None:
        self.base = base
        self.adjustment = adjustment
        self.rule = adjustment.rule
        self.calendar = calendar
        self.timeline = zone_timeline(zone)
        self._excluders = tuple(WallMatcher(f) for f in adjustment.crons)
        self._uniform = isinstance(base, CompiledCron)  # the same times on every day it fires
        # Per-day answers, asked again and again by neighbouring searches (bounded caches;
        # a search reads them from any thread, and a lost race only computes one twice).
        self._starts: dict[int, int] = {}
        self._targets: dict[int, int | None] = {}
        self._moves: dict[tuple[int, int], int] = {}
        self._slot_days: dict[int, int] = {}
        self._clean_days: dict[int, bool] = {}
        self._exclusions: dict[int, bool] = {}
        self._landings: dict[int, int | None] = {}
        self._successors: dict[int, int | None] = {}
        # Where a base slot lands, looked up instead of searched: only for `previous` over one
        # cron with no cron exclusion (see `_landing`).
        self._lands_directly = self.rule == "previous" and self._uniform and not self._excluders
        digest = "" if calendar is None else calendar.digest
        self.key = (
            f"adjusted-{base.key[0]}",
            repr(base.key),
            f"{zone}|{self.rule}|{adjustment.calendar}:{digest}|{'/'.join(adjustment.exclude)}",
        )
        period = base.nominal_period_ms
        # Removing slots never brings two closer; moving them can.
        self._period = probe_min_gap_ms(self, period) if adjustment.moves else period

    # -- days ------------------------------------------------------------------------------
    def _day_of(self, ms: int) -> int:
        return self.timeline.wall_of(ms // 1000) // DAY_S

    def _day_start_ms(self, z: int) -> int:
        start = self._starts.get(z)
        if start is None:
            start = _remember(self._starts, z, self.timeline.instant_of(z * DAY_S) * 1000)
        return start

    def _business(self, z: int) -> bool:
        return self.calendar is None or self.calendar.is_business_day(z)

    def _target(self, z: int) -> int | None:
        """The day the slots of local day `z` fire on, or None when they are dropped."""
        target = self._targets.get(z, _UNKNOWN)
        if target is _UNKNOWN:
            target = _remember(self._targets, z, self._find_target(z))
        return target  # type: ignore[return-value]

    def _find_target(self, z: int) -> int | None:
        if z in self.adjustment.dates:
            return None
        if self.rule is None or self._business(z):
            return z
        step = {"next": 1, "previous": -1}.get(self.rule)
        if step is not None:
            for k in range(1, MAX_MOVE_DAYS + 1):
                if self._business(z + step * k):
                    return z + step * k
        return None

    def _excluded(self, ms: int) -> bool:
        if not self._excluders:
            return False
        known = self._exclusions.get(ms)
        if known is None:
            known = _remember(self._exclusions, ms, self._matches_exclusion(ms))
        return known

    def _matches_exclusion(self, ms: int) -> bool:
        wall = self.timeline.wall_of(ms // 1000)
        for matcher, fields in zip(self._excluders, self.adjustment.crons, strict=True):
            w = wall if fields.has_seconds else wall - wall % 60
            if matcher.first_wall(w, w + 1) == w:
                return True
        return False

    def _moved(self, ms: int, days: int) -> int:
        key = (ms, days)
        moved = self._moves.get(key)
        if moved is None:
            wall = self.timeline.wall_of(ms // 1000) + days * DAY_S
            moved = _remember(self._moves, key, self.timeline.instant_of(wall) * 1000 + ms % 1000)
        return moved

    def _slot_day(self, ms: int) -> int:
        """`_day_of` for the base's slots, which searches meet again and again."""
        day = self._slot_days.get(ms)
        if day is None:
            day = _remember(self._slot_days, ms, self._day_of(ms))
        return day

    def _clean(self, z: int) -> bool:
        """Whether local day `z` has no clock change (its walls neither skip nor repeat)."""
        clean = self._clean_days.get(z)
        if clean is None:
            start = self._day_start_ms(z) // 1000
            end = self.timeline.segment(start).end
            clean = _remember(self._clean_days, z, end >= self._day_start_ms(z + 1) // 1000)
        return clean

    # -- the search ------------------------------------------------------------------------
    def next_after(self, t_ms: int) -> int | None:
        slot = self.base.next_after(t_ms)
        if slot is None:
            return None
        if self._lands_directly:
            found = self._landed_after(t_ms, slot)
            if found is not _UNKNOWN:
                return found  # type: ignore[return-value]
        day_t, day = self._day_of(t_ms), self._slot_day(slot)
        if self._target(day) == day and not self._excluded(slot):
            # The base's next slot stands, and nothing moved lands before it: no slot moves
            # forward past t (t's day and the one before are business days), or back before
            # it (the day after it is one). Days between t and it have no slot at all.
            rule = self.rule
            if (
                rule not in ("next", "previous")
                or (rule == "next" and self._business(day_t) and self._business(day_t - 1))
                or (rule == "previous" and self._business(day + 1))
            ):
                return slot
        return self._search(t_ms, day_t, slot)

    def _landed_after(self, t_ms: int, slot: int) -> object:
        """`next_after(t_ms)` looked up, for `previous` over one cron without cron exclusions:
        the landing of `slot` (the base's next slot after t) if it lands after t, else of the
        base's next slots in turn (a few at most); `_UNKNOWN` where `_landing`'s rule does not
        hold for one of them, and the walk (`_search`) decides.

        Why the first of them landing after t is the answer: with `previous`, a slot moves back
        only, so nothing at or before t lands after t, nor do the slots passed over here (they
        landed at or before t). Every other slot that lands on the same day as the one found
        comes from a day of that day's run of non-business days, at the same times of day
        (`_landing`'s rule): at a later time it lands later; at an earlier time, the found
        slot's own day had that time too, earlier than it, so at or before t, or passed over."""
        x: int | None = slot
        for _ in range(4):
            if x is None:
                return None  # the base has no slot left, and every one before landed by t
            fired = self._landings.get(x, _UNKNOWN)
            if fired is _UNKNOWN:
                fired = _remember(self._landings, x, self._landing(x))
            if fired is None:
                return _UNKNOWN
            if t_ms < fired:  # type: ignore[operator]
                return fired
            nxt = self._successors.get(x, _UNKNOWN)
            if nxt is _UNKNOWN:
                nxt = _remember(self._successors, x, self.base.next_after(x))
            x = nxt  # type: ignore[assignment]
        return _UNKNOWN

    def _landing(self, slot: int) -> int | None:
        """The instant base slot `slot` fires at under `previous`, where every slot of the days
        landing on its target day keeps the times of day it has (one cron, no cron exclusion,
        no clock change on those days: `_same_times_until`'s rule); None where that does not
        hold, or the slot is dropped."""
        day = self._slot_day(slot)
        target = self._target(day)
        if target is None:
            return None
        if not all(self._clean(z) for z in range(day, self._stop_day(target))):
            return None
        return self._moved(slot, target - day) if target != day else slot

    def _search(self, t_ms: int, day_t: int, slot_after_t: int) -> int | None:
        """`next_after` the long way: day by day, every day whose slots may land after t."""
        # The base's next slot after `cursor`, when already seen: without forward moves, no
        # slot at or before t can land after it, so the walk starts at the first one after t.
        cursor = t_ms
        known: int | None = slot_after_t
        if self.rule == "next":
            # Slots of the non-business days just before t's day may land on or after it.
            first = day_t
            while day_t - first < MAX_MOVE_DAYS and not self._business(first - 1):
                first -= 1
            cursor, known = max(self._day_start_ms(first) - 1, _MIN_MS), None
        best: int | None = None
        best_day = _NO_DAY  # the day `best` lands on
        stop_day = _NO_DAY  # days from here on land after `best`
        for _ in range(_MAX_DAYS_SCANNED):
            slot = known if known is not None and known > cursor else self.base.next_after(cursor)
            if slot is None:
                break
            day = self._slot_day(slot)
            if day >= stop_day:
                break
            target = self._target(day)
            known = None
            if target is not None:
                if best is not None and target > best_day:
                    break  # targets never decrease from one day to the next
                found, known = self._first_on(slot, day, target, t_ms)
                if found is not None and (best is None or found < best):
                    best, best_day = found, target
                    stop_day = self._stop_day(target)
                    if self._same_times_until(day, stop_day):
                        break  # the other days left land their slots at these same times
            if day + 1 >= stop_day:
                break
            cursor = self._day_start_ms(day + 1) - 1
            if cursor >= _MAX_MS:
                break
        return best

    def _same_times_until(self, day: int, stop_day: int) -> bool:
        """Whether every source day from `day` to `stop_day` has the very slot times `day`
        has: one cron (its times of day do not depend on the day), no cron exclusion, and no
        clock change in between (which shifts or repeats a time)."""
        if not self._uniform or self._excluders:
            return False
        return all(self._clean(z) for z in range(day, stop_day))

    def _stop_day(self, landed: int) -> int:
        """The first source day whose slots all land on a later day than `landed`."""
        if self.rule != "previous":
            return landed + 1  # slots never move back: later days land later
        for k in range(1, MAX_MOVE_DAYS + 1):
            if self._business(landed + k):
                return landed + k  # from it on, slots stay or move back to it at most
        return landed + MAX_MOVE_DAYS + 1

    def _first_on(
        self, slot: int, day: int, target: int, t_ms: int
    ) -> tuple[int | None, int | None]:
        """The earliest instant after `t_ms` that a slot of local day `day` (from `slot` on)
        fires at, moved to `target` (None if none of them does), and the base's first slot
        after that day when the walk saw it."""
        shift = target - day
        lead = t_ms - shift * _DAY_MS - (_DST_MARGIN_MS if shift else 0)
        x: int | None = slot if slot > lead else self.base.next_after(min(lead, _MAX_MS - 1))
        end = self._day_start_ms(day + 1)
        # Moved slots keep their order unless the day's clocks go back (its walls repeat).
        in_order = self._clean(day) or (
            self.timeline.offset_at(slot // 1000) <= self.timeline.offset_at(end // 1000 - 1)
        )
        best: int | None = None
        for _ in range(_MAX_SLOTS_SCANNED):
            if x is None or x >= end:
                # x is the base's first slot after the day unless the jump went past it.
                return best, (x if lead < end else None)
            if best is not None and x + shift * _DAY_MS > best + _DST_MARGIN_MS:
                break  # later slots of the day land later still (past a repeated hour)
            if not self._excluded(x):
                fired = self._moved(x, shift) if shift else x
                if fired > t_ms and (best is None or fired < best):
                    best = fired
                    if not shift or in_order:
                        break  # the day's later slots land later
            x = self.base.next_after(x)
        return best, None

    def _run_after(self, slot_ms: int, end_ms: int) -> list[int]:
        """The rest of `slot_ms`'s day straight from the base, when nothing there is moved in,
        moved out or excluded (most days of most schedules)."""
        if self._excluders:
            return []
        day = self._day_of(slot_ms)
        if self._target(day) != day:
            return []
        # Slots moved in from a neighbouring run of non-business days would interleave.
        if self.rule == "next" and not self._business(day - 1):
            return []
        if self.rule == "previous" and not self._business(day + 1):
            return []
        stop = min(end_ms, self._day_start_ms(day + 1) - 1)
        return self.base.occurrences(slot_ms, stop) if stop > slot_ms else []

    @property
    def nominal_period_ms(self) -> int | None:
        return self._period

    def sources_of(self, slot_ms: int) -> list[int]:
        """The base slots that fire at `slot_ms` (itself, when it stands; those moved onto
        it): what a preview names as a calendar move. Bounded by the move limit."""
        day = self._day_of(slot_ms)
        step = {"next": -1, "previous": 1}.get(self.rule or "", 0)
        out: list[int] = []
        for k in range(MAX_MOVE_DAYS + 1 if step else 1):
            source = day + step * k
            if self._target(source) != day:
                continue
            lo, hi = self._day_start_ms(source) - 1, self._day_start_ms(source + 1) - 1
            for x in self.base.occurrences(lo, hi):
                fired = self._moved(x, day - source) if source != day else x
                if fired == slot_ms and not self._excluded(x):
                    out.append(x)
        return sorted(out)
