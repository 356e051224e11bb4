"""The one place a service reads the clock.

Everything that decides takes time as an argument; services hold a `Clock` and pass
`clock.now()` down. Tests use `FakeClock` and move time by hand instead of sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch, UTC."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a FakeClock never goes backwards")
        self._now += seconds

    def set(self, instant: float) -> None:
        if instant < self._now:
            raise ValueError("a FakeClock never goes backwards")
        self._now = instant
