"""The watchdog's thresholds: data handed to the evaluator, never read from anywhere."""

from __future__ import annotations

from dataclasses import dataclass

from tickwheel.core.watchdog.jobs import DEFAULT_GRACE_MS


@dataclass(frozen=True, slots=True)
class Thresholds:
    """`resolve_after_ms`: how long a condition must stay clear before its incident resolves
    (a condition that comes back sooner stays the same incident: flapping is one incident).
    `update_every_ms`: the least time between two `updated` transitions of one incident.
    `settled_after_ms`: how long a finished execution's facts are kept, which bounds how late
    (in event time) a record about it may arrive and still be folded in the same way."""

    dead_letter_age_ms: int = 3_600_000
    oldest_ready_age_ms: int = 300_000
    derived_grace_ms: int = DEFAULT_GRACE_MS
    resolve_after_ms: int = 60_000
    update_every_ms: int = 300_000
    settled_after_ms: int = 3_600_000
    # How far past `maxRunTime` a run may go before it is too long (the worker's cancel,
    # its retry and their events take a moment).
    run_grace_ms: int = 30_000
    # How many jobs of one timer partition must be overdue, never fired, before the partition
    # itself is the alert (a parent) and they its suppressed children.
    parent_min_children: int = 2
