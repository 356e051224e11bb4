"""Overlap policy: what to do with an occurrence while earlier runs are still going."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tickwheel.core.errors import InvalidPolicy

OverlapPolicy = Literal["allow", "skip", "queue_one"]
OVERLAP_POLICIES: tuple[OverlapPolicy, ...] = ("allow", "skip", "queue_one")


@dataclass(frozen=True, slots=True)
class OverlapDecision:
    """`action`: fire now, skip (recorded as skipped in history), or queue until free."""

    action: Literal["fire", "skip", "queue"]
    reason: str


def decide_overlap(policy: str, running: int, queued: int) -> OverlapDecision:
    """Decide a due occurrence given how many runs of the job are running and queued.

    `allow` always fires; `skip` fires only when nothing is running; `queue_one` fires
    when nothing is running, otherwise queues one occurrence and skips any further one.
    """
    if running < 0 or queued < 0:
        raise ValueError(f"running ({running}) and queued ({queued}) must be >= 0")
    if policy == "allow":
        return OverlapDecision("fire", "overlap_allowed")
    if policy == "skip":
        if running:
            return OverlapDecision("skip", "previous_run_still_running")
        return OverlapDecision("fire", "not_running")
    if policy == "queue_one":
        if not running:
            return OverlapDecision("fire", "not_running")
        if not queued:
            return OverlapDecision("queue", "queued_behind_running")
        return OverlapDecision("skip", "queue_full")
    raise InvalidPolicy(
        "overlapPolicy", f"unknown overlap policy {policy!r}; accepted: allow, skip, queue_one"
    )
