"""Misfire: what happens to the occurrences a job missed while nobody was firing it.

`walk_forward` starts from the last fired occurrence (never from "now") and gives every
occurrence in (last, now] a disposition:

* `catch_up`: the newest `max_catch_up` missed occurrences fire, in order; older ones
  are `skip` (reason `max_catch_up_exceeded`) — backfill them explicitly if needed.
* `coalesce`: the newest occurrence fires once for the whole gap (reason
  `coalesced_run`); every other one is `coalesced` into it.
* `skip`: none fires; each is `skip` (reason `misfire_skip`) so history records it.

Occurrences in (now - grace_ms, now] are on time, not missed: they fire under
`catch_up` and `skip` (reason `on_time`); `coalesce` folds them into its one run.

Work is bounded whatever the outage: counting is arithmetic (`CompiledSchedule.count`),
at most `max_listed` non-firing occurrences are listed one by one, and the rest form
one `ElidedRange` (bounds and count) that the caller records as a range or pages
through with `compiled.occurrences(after_ms, through_ms)` in chunks. A job firing every
second that was down for a week costs a few thousand operations, not 600,000 objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, overload

from tickwheel.core.errors import InvalidPolicy
from tickwheel.core.schedule import CompiledSchedule

Disposition = Literal["fire", "skip", "coalesced"]
MisfirePolicy = Literal["catch_up", "coalesce", "skip"]
MISFIRE_POLICIES: tuple[MisfirePolicy, ...] = ("catch_up", "coalesce", "skip")
DEFAULT_MAX_LISTED = 1000


@dataclass(frozen=True, slots=True)
class MissedOccurrence:
    """One occurrence in the walked gap and what to do with it."""

    scheduled_ms: int
    disposition: Disposition
    reason: str


@dataclass(frozen=True, slots=True)
class ElidedRange:
    """`count` non-firing occurrences in (after_ms, through_ms], all with `disposition`.

    They are not listed one by one; they lie after every listed non-firing occurrence
    and before every firing one.
    """

    after_ms: int
    through_ms: int
    count: int
    disposition: Disposition
    reason: str


@dataclass(frozen=True)
class MisfireWalk(Sequence[MissedOccurrence]):
    """The outcome of `walk_forward`: a sequence of the listed occurrences, in time order.

    `elided` holds the un-listed middle (or None), `total` counts every occurrence in
    the gap (listed + elided), and `last_scheduled_ms` is the newest occurrence covered,
    the new watermark to persist (unchanged if nothing was due).
    """

    listed: tuple[MissedOccurrence, ...]
    elided: ElidedRange | None
    total: int
    last_scheduled_ms: int | None

    @overload
    def __getitem__(self, index: int) -> MissedOccurrence: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[MissedOccurrence]: ...

    def __getitem__(self, index: int | slice) -> MissedOccurrence | Sequence[MissedOccurrence]:
        return self.listed[index]

    def __len__(self) -> int:
        return len(self.listed)

    def __iter__(self) -> Iterator[MissedOccurrence]:
        return iter(self.listed)

    @property
    def to_fire(self) -> tuple[MissedOccurrence, ...]:
        """The occurrences to emit now, oldest first (never elided)."""
        return tuple(m for m in self.listed if m.disposition == "fire")


def _check(policy: str, max_catch_up: int, grace_ms: int, max_listed: int) -> None:
    if policy not in MISFIRE_POLICIES:
        raise InvalidPolicy(
            "misfirePolicy",
            f"unknown misfire policy {policy!r}; accepted: catch_up, coalesce, skip",
        )
    if max_catch_up < 0:
        raise InvalidPolicy("maxCatchUp", f"{max_catch_up} is negative; accepted: 0 or more")
    if grace_ms < 0:
        raise ValueError(f"grace_ms must be >= 0, got {grace_ms}")
    if max_listed < 1:
        raise ValueError(f"max_listed must be >= 1, got {max_listed}")


def walk_forward(
    compiled: CompiledSchedule,
    last_scheduled_ms: int | None,
    now_ms: int,
    policy: str,
    max_catch_up: int,
    *,
    grace_ms: int = 0,
    max_listed: int = DEFAULT_MAX_LISTED,
) -> MisfireWalk:
    """Every occurrence in (last_scheduled_ms, now_ms] with its disposition (module doc).

    `last_scheduled_ms` None means the job has no fired occurrence yet, so nothing can
    have been missed: pass its creation (or enable) instant to catch up from there.
    """
    _check(policy, max_catch_up, grace_ms, max_listed)
    if last_scheduled_ms is None or now_ms <= last_scheduled_ms:
        return MisfireWalk((), None, 0, last_scheduled_ms)
    last = last_scheduled_ms
    late_end = now_ms if policy == "coalesce" else max(last, now_ms - grace_ms)
    on_time = compiled.occurrences(late_end, now_ms) if late_end < now_ms else []
    n_late = compiled.count(last, late_end)
    if n_late == 0 and not on_time:
        return MisfireWalk((), None, 0, last)

    if policy == "catch_up":
        n_fire, fire_reason = min(n_late, max_catch_up), "catch_up"
        other: Disposition = "skip"
        other_reason = "max_catch_up_exceeded"
    elif policy == "coalesce":
        n_fire, fire_reason = 1, "coalesced_run"
        other, other_reason = "coalesced", "coalesced"
    else:
        n_fire, fire_reason = 0, ""
        other, other_reason = "skip", "misfire_skip"
    n_other = n_late - n_fire

    listed_other = compiled.first(last, late_end, min(n_other, max_listed))
    elided: ElidedRange | None = None
    if n_other > len(listed_other):
        through = compiled.kth_after(last, n_other, late_end)
        assert through is not None
        after = listed_other[-1]
        elided = ElidedRange(after, through, n_other - len(listed_other), other, other_reason)
    if n_fire:
        first_fire = compiled.kth_after(last, n_other + 1, late_end)
        assert first_fire is not None
        fired = compiled.occurrences(first_fire - 1, late_end)
    else:
        fired = []

    listed = (
        [MissedOccurrence(t, other, other_reason) for t in listed_other]
        + [MissedOccurrence(t, "fire", fire_reason) for t in fired]
        + [MissedOccurrence(t, "fire", "on_time") for t in on_time]
    )
    newest = on_time[-1] if on_time else (fired[-1] if fired else None)
    if newest is None:
        newest = elided.through_ms if elided is not None else listed_other[-1]
    return MisfireWalk(tuple(listed), elided, n_late + len(on_time), newest)
