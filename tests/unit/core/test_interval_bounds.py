"""Interval schedules (`every` + `phase`) and bounds (`startAt`, `endAt`, `maxRuns`).

Properties against brute force: an interval's slots are exactly `phase + k*every`; a
bounded schedule's slots are exactly the base's slots in [start, end], the first
maxRuns of them; every method agrees with that list, within the search step bound.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tests.unit.core.test_cron_bounded import STEP_BOUND, counting
from tickwheel.core.bounds import CompiledBounded
from tickwheel.core.definition import validate_definition
from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.errors import InvalidSchedule
from tickwheel.core.interval import CompiledInterval
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.errors import InvalidInput

T2026 = parse_iso_ms("2026-01-01T00:00:00Z", "t")
H = 3_600_000


def _brute(every_ms: int, phase_ms: int, lo: int, hi: int) -> list[int]:
    k = (lo - phase_ms) // every_ms - 1
    out = []
    while phase_ms + k * every_ms <= hi:
        if phase_ms + k * every_ms > lo:
            out.append(phase_ms + k * every_ms)
        k += 1
    return out


@PROPS
@given(
    st.integers(1, 100_000).map(lambda s: s * 1000),
    st.integers(-(10**12), 10**12).map(lambda ms: ms - ms % 1000),
    st.integers(0, 10**9),
    st.integers(0, 10**9),
)
def test_interval_slots_are_phase_plus_multiples(every: int, phase: int, a: int, w: int) -> None:
    compiled = CompiledInterval(every, phase)
    lo, hi = T2026 + a, T2026 + a + w
    expected = _brute(every, phase, lo, hi)
    assert compiled.occurrences(lo, hi) == expected
    assert compiled.count(lo, hi) == len(expected)
    assert compiled.first(lo, hi, 3) == expected[:3]
    nxt = compiled.next_after(lo)
    assert nxt is not None and (nxt - phase) % every == 0 and lo < nxt <= lo + every
    prev = compiled.prev_before(lo)
    assert prev is not None and prev < lo <= prev + every and (prev - phase) % every == 0
    if expected:
        assert compiled.kth_after(lo, len(expected), hi) == expected[-1]
    assert compiled.nominal_period_ms == every


def test_default_phase_is_the_epoch_and_phases_normalise() -> None:
    s = parse_schedule(every="90m")
    compiled = compile_schedule(s)
    assert T2026 % (90 * 60_000) == 0  # 2026-01-01T00:00Z is on the epoch-anchored grid
    assert compiled.next_after(T2026) == T2026 + 90 * 60_000
    assert CompiledInterval(90 * 60_000, 0) == CompiledInterval(90 * 60_000, 90 * 60_000 * 7)
    phased = compile_schedule(parse_schedule(every="90m", phase="2026-01-01T00:10:00+00:00"))
    assert phased.next_after(T2026) == T2026 + 10 * 60_000


def test_an_interval_ignores_dst_it_is_real_time() -> None:
    compiled = compile_schedule(parse_schedule(every="1h", timezone="America/New_York"))
    start = parse_iso_ms("2024-03-10T05:00:00Z", "t")
    slots = compiled.first(start - 1, start + 5 * H, 5)
    assert [b - a for a, b in itertools.pairwise(slots)] == [H] * 4


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(every="90m", cron="0 * * * *"), "schedule"),
        (dict(every="90m", run_at="2030-01-01T00:00:00Z"), "schedule"),
        (dict(cron="0 * * * *", phase="2030-01-01T00:00:00Z"), "phase"),
        (dict(every="90m", dst_policy="skip_both"), "dstPolicy"),
        (dict(every="500ms"), "every"),
        (dict(every="1500ms"), "every"),
        (dict(every="400d"), "every"),
        (dict(every="soon"), "every"),
        (dict(every="90m", phase="2030-01-01T00:00:00"), "phase"),
        (dict(cron="0 * * * *", max_runs=0), "maxRuns"),
        (dict(cron="0 * * * *", max_runs=True), "maxRuns"),
        (dict(cron="0 * * * *", start_at="2030-01-02T00:00Z", end_at="2030-01-01T00:00Z"), "endAt"),
        (dict(cron="0 0 * * *", start_at="2030-01-01T01:00Z", end_at="2030-01-01T23:00Z"),
         "schedule"),
        (dict(run_at="2030-01-01T00:00:00Z", max_runs=3), "schedule"),
    ],
)  # fmt: skip
def test_bad_interval_and_bound_fields_are_refused(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        parse_schedule(**kwargs)
    assert info.value.field == field and "accepted" in info.value.message


BASES = st.sampled_from(["0 2 * * *", "*/15 * * * *", "0 18 LW * *", "0 9 * * MON#1"])


@PROPS
@given(
    st.one_of(BASES.map(lambda c: {"cron": c, "timezone": "Europe/London"}),
              st.sampled_from(["90m", "7h", "45s"]).map(lambda e: {"every": e})),
    st.integers(0, 200 * 24).map(lambda h: T2026 + h * H),
    st.one_of(st.none(), st.integers(1, 60 * 24).map(lambda h: h * H)),
    st.one_of(st.none(), st.integers(1, 40)),
    st.integers(-10 * 24, 260 * 24).map(lambda h: T2026 + h * H + 1234),
)  # fmt: skip
def test_bounded_slots_are_the_base_slots_in_range_first_max_runs(
    base: dict[str, str], start: int, span: int | None, max_runs: int | None, t: int
) -> None:
    end = None if span is None else start + span
    unbounded = compile_schedule(parse_schedule(**base))  # type: ignore[arg-type]
    window_end = end if end is not None else start + 5 * 366 * 24 * H
    expected = unbounded.occurrences(start - 1, window_end)
    if max_runs is not None:
        expected = expected[:max_runs]
    if not expected:
        return
    compiled = CompiledBounded(unbounded, start, end, max_runs)
    with counting() as steps:
        got = compiled.occurrences(start - 10 * 24 * H, window_end + 10 * 24 * H)
        nxt, prev = compiled.next_after(t), compiled.prev_before(t)
        n = compiled.count(t - 30 * 24 * H, t)
    assert steps.count <= 3 * STEP_BOUND
    if max_runs is not None or end is not None:
        assert got == expected
        assert compiled.next_after(expected[-1]) is None
    assert nxt == next((s for s in expected if s > t), None) or (
        end is None and max_runs is None and nxt is not None and nxt > t
    )
    assert prev == next((s for s in reversed(expected) if s < t), None)
    assert n == len([s for s in expected if t - 30 * 24 * H < s <= t]) or (
        end is None and max_runs is None
    )


def test_max_runs_without_start_counts_from_creation() -> None:
    created = T2026 + 5 * H + 1
    s = parse_schedule(cron="0 * * * *", max_runs=3, count_from_ms=created)
    compiled = compile_schedule(s)
    assert compiled.first(0, 2**50, 10) == [T2026 + 6 * H, T2026 + 7 * H, T2026 + 8 * H]


def _definition(**extra: Any) -> dict[str, Any]:
    return {"jobId": "j", "type": "noop", **extra}


def test_definitions_carry_interval_and_bounds_through_the_record() -> None:
    spec = _definition(every="90m", phase="2026-01-01T00:10:00Z", startAt="2026-02-01T00:00:00Z",
                       endAt="2026-03-01T00:00:00+01:00", maxRuns=5)  # fmt: skip
    record = validate_definition(spec, T2026)
    assert record["every"] == "90m" and record["cron"] is None and record["runAt"] is None
    assert record["phase"] == T2026 + 10 * 60_000 and record["maxRuns"] == 5
    assert record["startAt"] == parse_iso_ms("2026-02-01T00:00:00Z", "t")
    check_definition_record(record, "j")
    compiled = compile_record_schedule(record)
    slots = compiled.first(0, 2**50, 10)
    assert len(slots) == 5 and slots[0] == record["startAt"] + 10 * 60_000
    assert compile_record_schedule(dict(record)) is compiled  # cached per schedule


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (dict(every="90s", jitter="2m"), "jitter"),
        (dict(every="90m", cron="0 * * * *"), "schedule"),
        (dict(runAt="2030-01-01T00:00:00Z", maxRuns=2), "schedule"),
        (dict(every=90), "every"),
    ],
)
def test_definition_refusals_name_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        validate_definition(_definition(**extra), T2026)
    assert info.value.field == field


def test_bounds_without_a_start_search_from_the_range_floor_without_raising() -> None:
    only_end = compile_schedule(parse_schedule(cron="0 0 * * *", end_at="2030-01-01T00:00Z"))
    assert only_end.next_after(T2026) == T2026 + 24 * H
    # Without startAt or a creation instant, maxRuns counts from the range's floor (1900),
    # whose own first millisecond is not a slot.
    floor = -2_208_988_800_000
    hourly = compile_schedule(parse_schedule(every="1h", max_runs=2))
    assert hourly.first(-(2**42), 2**50, 5) == [floor + H, floor + 2 * H]
