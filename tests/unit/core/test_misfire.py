"""Walk-forward after an outage: every missed slot accounted for, in order, bounded work."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tickwheel.core.errors import InvalidPolicy
from tickwheel.core.misfire import MisfireWalk, walk_forward
from tickwheel.core.schedule import CompiledSchedule, compile_schedule, parse_schedule

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z, a whole hour
MIN = 60_000


def _every_minute() -> CompiledSchedule:
    return compile_schedule(parse_schedule(cron="* * * * *"))


def _slots(walk: MisfireWalk) -> list[tuple[int, str, str]]:
    return [(m.scheduled_ms, m.disposition, m.reason) for m in walk]


def test_catch_up_fires_the_newest_and_records_older_ones_as_skipped() -> None:
    walk = walk_forward(_every_minute(), T0, T0 + 10 * MIN, "catch_up", 3)
    assert _slots(walk) == [
        *[(T0 + k * MIN, "skip", "max_catch_up_exceeded") for k in range(1, 8)],
        *[(T0 + k * MIN, "fire", "catch_up") for k in range(8, 11)],
    ]
    assert walk.total == 10 and walk.elided is None
    assert walk.last_scheduled_ms == T0 + 10 * MIN
    assert [m.scheduled_ms for m in walk.to_fire] == [T0 + 8 * MIN, T0 + 9 * MIN, T0 + 10 * MIN]


def test_catch_up_within_the_bound_fires_every_missed_slot() -> None:
    walk = walk_forward(_every_minute(), T0, T0 + 4 * MIN, "catch_up", 10)
    assert _slots(walk) == [(T0 + k * MIN, "fire", "catch_up") for k in range(1, 5)]


def test_coalesce_fires_once_for_the_whole_gap() -> None:
    walk = walk_forward(_every_minute(), T0, T0 + 5 * MIN + 30_000, "coalesce", 0)
    assert _slots(walk) == [
        *[(T0 + k * MIN, "coalesced", "coalesced") for k in range(1, 5)],
        (T0 + 5 * MIN, "fire", "coalesced_run"),
    ]


def test_skip_records_every_slot_as_skipped_and_fires_none() -> None:
    walk = walk_forward(_every_minute(), T0, T0 + 3 * MIN, "skip", 100)
    assert _slots(walk) == [(T0 + k * MIN, "skip", "misfire_skip") for k in range(1, 4)]
    assert walk.to_fire == ()
    assert walk.last_scheduled_ms == T0 + 3 * MIN


def test_slots_within_grace_are_on_time_not_missed() -> None:
    walk = walk_forward(_every_minute(), T0, T0 + 5 * MIN, "skip", 0, grace_ms=90_000)
    assert _slots(walk) == [
        *[(T0 + k * MIN, "skip", "misfire_skip") for k in range(1, 4)],
        (T0 + 4 * MIN, "fire", "on_time"),
        (T0 + 5 * MIN, "fire", "on_time"),
    ]


def test_nothing_missed_without_history_or_without_elapsed_slots() -> None:
    assert walk_forward(_every_minute(), None, T0, "catch_up", 5).total == 0
    walk = walk_forward(_every_minute(), T0, T0 + 59_999, "catch_up", 5)
    assert len(walk) == 0 and walk.last_scheduled_ms == T0


def test_a_week_of_an_every_second_job_is_bounded_and_fully_accounted() -> None:
    every_second = compile_schedule(parse_schedule(cron="* * * * * *"))
    week = 7 * 86_400_000
    for policy, fired in (("skip", 0), ("catch_up", 5), ("coalesce", 1)):
        walk = walk_forward(every_second, T0, T0 + week, policy, 5, max_listed=100)
        assert walk.total == 604_800
        assert len(walk) == 100 + fired
        assert walk.elided is not None
        assert walk.elided.count == 604_800 - 100 - fired
        # The elided range sits exactly between the listed non-firing slots and the fired ones.
        assert walk.elided.after_ms == walk[99].scheduled_ms == T0 + 100_000
        fired_slots = [m.scheduled_ms for m in walk.to_fire]
        last_skipped = T0 + week - 1000 * fired
        assert walk.elided.through_ms == last_skipped
        assert fired_slots == [last_skipped + 1000 * k for k in range(1, fired + 1)]
        assert every_second.count(walk.elided.after_ms, walk.elided.through_ms) == walk.elided.count
        assert walk.last_scheduled_ms == T0 + week


@PROPS
@given(
    cron=st.sampled_from(["* * * * *", "*/7 * * * *", "0 * * * *", "30 2 * * *", "*/20 * * * * *"]),
    zone=st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe"]),
    policy=st.sampled_from(["catch_up", "coalesce", "skip"]),
    max_catch_up=st.integers(0, 6),
    outage_ms=st.integers(0, 3 * 86_400_000),
    grace_ms=st.integers(0, 120_000),
    max_listed=st.integers(1, 50),
    start=st.integers(1_700_000_000_000, 1_900_000_000_000),
)
def test_every_missed_slot_is_accounted_for_exactly_once_in_order(
    cron: str,
    zone: str,
    policy: str,
    max_catch_up: int,
    outage_ms: int,
    grace_ms: int,
    max_listed: int,
    start: int,
) -> None:
    compiled = compile_schedule(parse_schedule(cron=cron, timezone=zone))
    now = start + outage_ms
    walk = walk_forward(
        compiled, start, now, policy, max_catch_up, grace_ms=grace_ms, max_listed=max_listed
    )
    truth = compiled.occurrences(start, now)
    # Expand the elided range back into slots: listed + elided must be exactly the truth.
    seen = [m.scheduled_ms for m in walk]
    if walk.elided is not None:
        middle = compiled.occurrences(walk.elided.after_ms, walk.elided.through_ms)
        assert len(middle) == walk.elided.count
        after = walk.elided.after_ms
        cut = next((i for i, m in enumerate(walk) if m.scheduled_ms > after), len(seen))
        seen = seen[:cut] + middle + seen[cut:]
    assert seen == truth
    assert walk.total == len(truth)
    fired = walk.to_fire
    on_time = [t for t in truth if t > now - grace_ms]
    if policy == "coalesce":
        assert [m.scheduled_ms for m in fired] == truth[-1:]
    elif policy == "skip":
        assert [m.scheduled_ms for m in fired] == on_time
    else:
        late = [t for t in truth if t <= now - grace_ms]
        newest_late = late[len(late) - min(len(late), max_catch_up) :]
        assert [m.scheduled_ms for m in fired] == newest_late + on_time
    assert walk.last_scheduled_ms == (truth[-1] if truth else start)
    non_fired = [m for m in walk if m.disposition != "fire"]
    assert len(non_fired) <= max_listed


def test_bad_policy_and_bound_are_rejected() -> None:
    with pytest.raises(
        InvalidPolicy, match="unknown misfire policy 'later'; accepted: catch_up, coalesce, skip"
    ):
        walk_forward(_every_minute(), T0, T0 + MIN, "later", 1)
    with pytest.raises(InvalidPolicy, match="maxCatchUp: -1 is negative; accepted: 0 or more"):
        walk_forward(_every_minute(), T0, T0 + MIN, "catch_up", -1)
