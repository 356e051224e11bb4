"""Errors raised by the scheduling core.

Each says what was wrong and what is accepted; each subclasses `TickwheelError` and the
fitting built-in (through `InvalidInput`, which is a `ValueError`).
"""

from __future__ import annotations

from tickwheel.errors import InvalidInput, TickwheelError


class InvalidSchedule(InvalidInput):
    """A cron expression, time zone, `runAt` instant or DST policy is not acceptable.

    `field` names the job-definition field (`cron`, `timezone`, `runAt`, `dstPolicy`,
    `schedule`); `message` says what is wrong and what is accepted.
    """


class InvalidPolicy(InvalidInput):
    """A misfire, overlap or retry setting is not acceptable (`field` names which)."""


class NotAnOccurrence(TickwheelError, ValueError):
    """An instant given as an occurrence of a schedule is not on that schedule's grid."""

    def __init__(self, scheduled_ms: int, detail: str) -> None:
        super().__init__(f"{scheduled_ms} is not an occurrence of {detail}")
        self.scheduled_ms = scheduled_ms


class OutOfRange(TickwheelError, ValueError):
    """An instant lies outside the range the core computes schedules for."""
