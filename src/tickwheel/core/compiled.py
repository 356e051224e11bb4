"""The compiled-schedule interface every schedule kind implements, and the one-off kind.

All instants are int epoch milliseconds UTC; every method is bounded (decision 0052).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["CompiledOneOff", "CompiledSchedule"]


class CompiledSchedule(ABC):
    """A schedule ready to compute occurrences; equal keys mean equal behaviour.

    Instances are immutable from the outside, hashable by `key`, and safe to share
    between any number of jobs.
    """

    key: tuple[str, str, str]

    @abstractmethod
    def next_after(self, t_ms: int) -> int | None:
        """The first occurrence strictly after `t_ms`, or None if there is none."""

    @abstractmethod
    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        """Occurrences in (start_ms, end_ms], strictly increasing."""

    @abstractmethod
    def count(self, start_ms: int, end_ms: int) -> int:
        """How many occurrences lie in (start_ms, end_ms], without listing them."""

    @abstractmethod
    def prev_before(self, t_ms: int) -> int | None:
        """The last occurrence strictly before `t_ms`, or None if there is none."""

    def period_start_before(self, slot_ms: int) -> int | None:
        """Where the period that ends at `slot_ms` starts: the schedule's previous slot (a
        bounded schedule's first slot still covers the period its grid gives it)."""
        return self.prev_before(slot_ms)

    @property
    @abstractmethod
    def nominal_period_ms(self) -> int | None:
        """Smallest wall-clock distance between occurrences; None for a one-off (or a
        schedule that never fires)."""

    def first(self, start_ms: int, end_ms: int, limit: int) -> list[int]:
        """The first `limit` occurrences in (start_ms, end_ms]."""
        out: list[int] = []
        t = start_ms
        while len(out) < limit:
            nxt = self.next_after(t)
            if nxt is None or nxt > end_ms:
                break
            out.append(nxt)
            t = nxt
        return out

    def kth_after(self, start_ms: int, k: int, end_ms: int) -> int | None:
        """The k-th (1-based) occurrence in (start_ms, end_ms], found by bisecting `count`."""
        if k < 1 or self.count(start_ms, end_ms) < k:
            return None
        # Occurrences fall on whole seconds: bisect over seconds, smallest x with count >= k.
        lo, hi = start_ms // 1000, end_ms // 1000
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(start_ms, mid * 1000) >= k:
                hi = mid
            else:
                lo = mid
        return hi * 1000

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompiledSchedule) and other.key == self.key

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key!r}"


class CompiledOneOff(CompiledSchedule):
    """A one-off schedule: a single occurrence at `run_at_ms`."""

    __slots__ = ("key", "run_at_ms")

    def __init__(self, run_at_ms: int) -> None:
        self.run_at_ms = run_at_ms
        self.key = ("once", str(run_at_ms), "")

    def next_after(self, t_ms: int) -> int | None:
        return self.run_at_ms if self.run_at_ms > t_ms else None

    def occurrences(self, start_ms: int, end_ms: int) -> list[int]:
        return [self.run_at_ms] if start_ms < self.run_at_ms <= end_ms else []

    def count(self, start_ms: int, end_ms: int) -> int:
        return 1 if start_ms < self.run_at_ms <= end_ms else 0

    def prev_before(self, t_ms: int) -> int | None:
        return self.run_at_ms if self.run_at_ms < t_ms else None

    @property
    def nominal_period_ms(self) -> int | None:
        return None
