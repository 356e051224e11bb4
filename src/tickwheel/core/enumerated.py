"""Schedules built from other schedules: several specs (their union) and the enumerated base
that adjusted schedules (exclusions, calendars: `business_days.py`) share.

Their slots are found one at a time by `next_after`, so `count`, `kth_after` and
`prev_before` walk slots rather than doing arithmetic; every walk is bounded by its window
or by the supported instant range (decision 0052).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.zones import MAX_INSTANT_S, MIN_INSTANT_S

__all__ = ["CompiledNothing", "CompiledUnion", "EnumeratedSchedule", "probe_min_gap_ms"]

_MIN_MS, _MAX_MS = MIN_INSTANT_S * 1000, MAX_INSTANT_S * 1000
# Where the smallest gap between slots is measured, and how many slots: a fixed stretch, so
# every process finds the same period (and the same default jitter) for the same schedule.
_PROBE_FROM_MS = 1_577_836_800_000  # 2020-01-01T00:00:00Z
_PROBE_TO_MS = _PROBE_FROM_MS + 2 * 366 * 86_400_000
_PROBE_SLOTS = 1_024


def probe_min_gap_ms(schedule: CompiledSchedule, known_ms: int | None) -> int | None:
    """The smallest gap between consecutive slots over the probe stretch (2020-2021), and
    no more than `known_ms`: what moves and unions can bring closer than their parts."""
    slots = schedule.first(_PROBE_FROM_MS, _PROBE_TO_MS, _PROBE_SLOTS)
    gaps = [b - a for a, b in itertools.pairwise(slots)]
    found = [g for g in (*gaps, known_ms) if g is not None and g > 0]
    return min(found) if found else None


class EnumeratedSchedule(CompiledSchedule):
    """Slots found by `next_after`; `occurrences` may take runs of them at once
    (`_run_after`), the rest follows from it."""

    __slots__ = ()

    def _run_after(self, slot_ms: int, end_ms: int) -> list[int]:
        """Slots after `slot_ms` (itself a slot) up to `end_ms` known without a search: none
        unless a subclass knows better."""
        return []

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        out: list[int] = []
        t = max(start_ms, _MIN_MS - 1)
        end_ms = min(end_ms, _MAX_MS)
        while t < end_ms:
            nxt = self.next_after(t)
            if nxt is None or nxt > end_ms:
                break
            out.append(nxt)
            run = self._run_after(nxt, end_ms)
            out.extend(run)
            t = run[-1] if run else nxt
        return out

    def count(self, start_ms: int, end_ms: int) -> int:
        return len(self.occurrences(start_ms, end_ms))

    def kth_after(self, start_ms: int, k: int, end_ms: int) -> int | None:
        if k < 1:
            return None
        # Slots are listed a window at a time, the window growing, so a k-th slot far away
        # costs a few dozen windows and a near one a single short one.
        width = max(2 * k * (self.nominal_period_ms or 1000), 60_000)
        seen, t = 0, start_ms
        while t < end_ms:
            stop = min(end_ms, t + width)
            slots = self.occurrences(t, stop)
            if seen + len(slots) >= k:
                return slots[k - seen - 1]
            seen += len(slots)
            t, width = stop, width * 2
        return None

    def prev_before(self, t_ms: int) -> int | None:
        end = min(t_ms - 1, _MAX_MS)
        width = max(2 * (self.nominal_period_ms or 1000), 60_000)
        while True:
            start = max(end - width, _MIN_MS - 1)
            slots = self.occurrences(start, end)
            if slots:
                return slots[-1]
            if start < _MIN_MS:
                return None
            end, width = start, width * 2


class CompiledUnion(EnumeratedSchedule):
    """Several specs of one job: every slot of any of them, each once."""

    __slots__ = ("_period", "key", "parts")

    def __init__(self, parts: Iterable[CompiledSchedule]) -> None:
        self.parts = tuple(parts)
        self.key = ("union", "+".join(repr(p.key) for p in self.parts), "")
        periods = [p.nominal_period_ms for p in self.parts if p.nominal_period_ms is not None]
        self._period = probe_min_gap_ms(self, min(periods) if periods else None)

    def next_after(self, t_ms: int) -> int | None:
        found = [n for n in (p.next_after(t_ms) for p in self.parts) if n is not None]
        return min(found) if found else None

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        merged = heapq.merge(*(p.occurrences(start_ms, end_ms) for p in self.parts))
        out: list[int] = []
        for slot in merged:
            if not out or slot != out[-1]:
                out.append(slot)
        return out

    def prev_before(self, t_ms: int) -> int | None:
        found = [n for n in (p.prev_before(t_ms) for p in self.parts) if n is not None]
        return max(found) if found else None

    @property
    def nominal_period_ms(self) -> int | None:
        return self._period


class CompiledNothing(CompiledSchedule):
    """A schedule with no slot: a job whose calendar the timer has not read (yet). It waits,
    never fires on a day its calendar might forbid; the slots it misses meanwhile are owed
    under its misfire policy once the calendar arrives."""

    __slots__ = ("key",)

    def __init__(self, reason: str) -> None:
        self.key = ("nothing", reason, "")

    def next_after(self, t_ms: int) -> int | None:
        return None

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        return []

    def count(self, start_ms: int, end_ms: int) -> int:
        return 0

    def prev_before(self, t_ms: int) -> int | None:
        return None

    @property
    def nominal_period_ms(self) -> int | None:
        return None
