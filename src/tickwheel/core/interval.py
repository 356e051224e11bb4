"""Interval schedules: a slot every `every` on the UTC timeline, anchored at `phase`.

Slots are `phase + k * every` for every integer k (docs/schedules.md §2). A duration is
real elapsed time, so no DST policy applies: a 90-minute job runs every 90 minutes
through a clock change. Everything is arithmetic, so every method is O(1) but
`occurrences` (linear in what it returns).
"""

from __future__ import annotations

from tickwheel.core.compiled import CompiledSchedule
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.zones import MAX_INSTANT_S, MIN_INSTANT_S
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput

__all__ = ["MAX_EVERY_MS", "MIN_EVERY_MS", "CompiledInterval", "parse_every_ms"]

MIN_EVERY_MS = 1_000
MAX_EVERY_MS = 366 * 86_400_000
_MIN_MS, _MAX_MS = MIN_INSTANT_S * 1000, MAX_INSTANT_S * 1000
_EVERY_HELP = "a duration of whole seconds from 1s to 366d, e.g. '90m', '1h30m', '15s'"


def parse_every_ms(value: object) -> int:
    """An `every` duration as milliseconds; raises `InvalidSchedule` (field `every`)."""
    if not isinstance(value, str):
        raise InvalidSchedule("every", f"{value!r}; accepted: {_EVERY_HELP}")
    try:
        every = parse_duration_ms(value, "every")
    except InvalidInput:
        raise InvalidSchedule(
            "every", f"{value[:40]!r} is not a duration; accepted: {_EVERY_HELP}"
        ) from None
    # Slots are identities on whole seconds, as cron's are (kth/period maths rely on it).
    if not MIN_EVERY_MS <= every <= MAX_EVERY_MS or every % 1000:
        raise InvalidSchedule("every", f"{value!r}; accepted: {_EVERY_HELP}")
    return every


class CompiledInterval(CompiledSchedule):
    """Slots `phase_ms + k * every_ms`, inside the supported instant range."""

    __slots__ = ("every_ms", "key", "phase_ms")

    def __init__(self, every_ms: int, phase_ms: int = 0) -> None:
        self.every_ms = every_ms
        # Normalised so equal slot sets share one key (and one cache entry).
        self.phase_ms = phase_ms % every_ms
        self.key = ("every", str(every_ms), str(self.phase_ms))

    def _index(self, t_ms: int) -> int:
        """The k of the last slot at or before t_ms."""
        return (t_ms - self.phase_ms) // self.every_ms

    def _slot(self, k: int) -> int | None:
        slot = self.phase_ms + k * self.every_ms
        return slot if _MIN_MS <= slot <= _MAX_MS else None

    def next_after(self, t_ms: int) -> int | None:
        return self._slot(self._index(t_ms) + 1)

    def prev_before(self, t_ms: int) -> int | None:
        return self._slot(self._index(t_ms - 1))

    def count(self, start_ms: int, end_ms: int) -> int:
        start_ms, end_ms = max(start_ms, _MIN_MS - 1), min(end_ms, _MAX_MS)
        if end_ms <= start_ms:
            return 0
        return self._index(end_ms) - self._index(start_ms)

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        n = self.count(start_ms, end_ms)
        if n <= 0:
            return []
        first = self.phase_ms + (self._index(max(start_ms, _MIN_MS - 1)) + 1) * self.every_ms
        return [first + i * self.every_ms for i in range(n)]

    def kth_after(self, start_ms: int, k: int, end_ms: int) -> int | None:
        if k < 1 or self.count(start_ms, end_ms) < k:
            return None
        return self.phase_ms + (self._index(max(start_ms, _MIN_MS - 1)) + k) * self.every_ms

    @property
    def nominal_period_ms(self) -> int | None:
        return self.every_ms
