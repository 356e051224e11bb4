"""Identity, jitter, overlap, retry and period decisions."""

from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tickwheel.core.errors import InvalidPolicy, NotAnOccurrence
from tickwheel.core.identity import EXECUTION_NAMESPACE, execution_id
from tickwheel.core.jitter import (
    default_jitter_window_ms,
    jitter_offset_from_seed,
    jitter_offset_ms,
    jitter_seed,
)
from tickwheel.core.overlap import decide_overlap
from tickwheel.core.period import period_of, render_payload_template
from tickwheel.core.retry import RetryPolicy, decide_retry
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.errors import InvalidInput

T0 = 1_800_000_000_000

# -- identity ---------------------------------------------------------------------------


def test_execution_id_is_a_deterministic_uuid5_of_the_occurrence() -> None:
    eid = execution_id("report-daily", 3, T0)
    assert eid == execution_id("report-daily", 3, T0)
    parsed = uuid.UUID(eid)
    assert parsed.version == 5
    # Pinned: changing the derivation would re-identify every past occurrence.
    assert eid == str(uuid.uuid5(EXECUTION_NAMESPACE, f"v1:12:report-daily:3:{T0}"))


@PROPS
@given(
    job_id=st.text(min_size=1, max_size=40),
    version=st.integers(min_value=1, max_value=10**6),
    slot=st.integers(min_value=0, max_value=2**42),
)
def test_execution_id_equals_the_library_uuid5_for_any_occurrence(
    job_id: str, version: int, slot: int
) -> None:
    name = f"v1:{len(job_id.encode('utf-8'))}:{job_id}:{version}:{slot}"
    assert execution_id(job_id, version, slot) == str(uuid.uuid5(EXECUTION_NAMESPACE, name))


def test_execution_id_differs_when_any_part_differs() -> None:
    ids = {
        execution_id("a", 1, T0),
        execution_id("a", 2, T0),
        execution_id("a", 1, T0 + 1),
        execution_id("b", 1, T0),
        # length prefix: no ambiguity between job ids containing the separator
        execution_id("a:1", 1, T0),
        execution_id("a", 11, T0),
    }
    assert len(ids) == 6


# -- jitter -----------------------------------------------------------------------------


@PROPS
@given(job=st.text(max_size=40), slot=st.integers(0, 2**45), window=st.integers(0, 3_600_000))
def test_jitter_is_deterministic_and_inside_the_window(job: str, slot: int, window: int) -> None:
    offset = jitter_offset_ms(job, slot, window)
    assert offset == jitter_offset_ms(job, slot, window)
    assert offset == jitter_offset_from_seed(jitter_seed(job), slot, window)
    assert (offset == 0) if window == 0 else (0 <= offset < window)


def test_jitter_spreads_evenly_across_the_window() -> None:
    window, buckets, n = 60_000, 60, 60_000
    counts = [0] * buckets
    for i in range(n):
        counts[jitter_offset_ms(f"job-{i}", T0, window) * buckets // window] += 1
    expected = n / buckets
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    # 59 degrees of freedom: chi2 > 100 would be p < 0.001 for a uniform spread.
    assert chi2 < 100, counts
    # and one job over many slots spreads as well
    per_slot = {jitter_offset_ms("one-job", T0 + k * 60_000, window) for k in range(1_000)}
    assert len(per_slot) > 900


def test_fixed_offset_per_job_when_not_varying_by_slot() -> None:
    offsets = {jitter_offset_ms("j", T0 + k, 60_000, vary_by_slot=False) for k in range(100)}
    assert len(offsets) == 1


def test_default_jitter_window() -> None:
    minute, day = 60_000, 86_400_000
    assert default_jitter_window_ms(day) == 60_000  # capped at 60 s
    assert default_jitter_window_ms(5 * minute) == 30_000  # a tenth of the period
    assert default_jitter_window_ms(1_000) == 100
    assert default_jitter_window_ms(None) == 0  # one-offs
    assert default_jitter_window_ms(day, explicit_ms=0) == 0  # opted out
    assert default_jitter_window_ms(day, explicit_ms=90_000) == 90_000
    with pytest.raises(InvalidInput, match=r"jitter: 60000 ms is not shorter than the schedule's"):
        default_jitter_window_ms(minute, explicit_ms=minute)
    every_5 = compile_schedule(parse_schedule(cron="*/5 * * * *"))
    weekdays = compile_schedule(parse_schedule(cron="0 9 * * 1-5"))
    assert every_5.nominal_period_ms == 5 * minute
    assert weekdays.nominal_period_ms == day
    assert compile_schedule(parse_schedule(cron="0,10 0 * * *")).nominal_period_ms == 10 * minute


# -- overlap ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "running", "queued", "action"),
    [
        ("allow", 0, 0, "fire"),
        ("allow", 3, 0, "fire"),
        ("skip", 0, 0, "fire"),
        ("skip", 1, 0, "skip"),
        ("queue_one", 0, 0, "fire"),
        ("queue_one", 1, 0, "queue"),
        ("queue_one", 1, 1, "skip"),
    ],
)
def test_overlap_decisions(policy: str, running: int, queued: int, action: str) -> None:
    assert decide_overlap(policy, running, queued).action == action


def test_unknown_overlap_policy() -> None:
    with pytest.raises(InvalidPolicy, match="accepted: allow, skip, queue_one"):
        decide_overlap("wait", 1, 0)


# -- retry ------------------------------------------------------------------------------


def test_retry_uses_full_jitter_under_the_capped_exponential_ceiling() -> None:
    policy = RetryPolicy(base_ms=1_000, cap_ms=30_000, max_attempts=10)
    rng = random.Random(7)
    for attempt in range(1, 10):
        ceiling = min(30_000, 1_000 * 2**attempt)
        delays = [decide_retry(policy, attempt, "retryable", rng).delay_ms for _ in range(400)]
        assert all(d is not None and 0 <= d <= ceiling for d in delays)
        # full jitter: spread over the whole range, not clustered at the ceiling
        assert min(d for d in delays if d is not None) < ceiling * 0.1
        assert max(d for d in delays if d is not None) > ceiling * 0.9
    decision = decide_retry(policy, 2, "retryable", rng)
    assert decision.action == "retry" and decision.next_attempt == 3


def test_retry_dead_letters_permanent_errors_and_exhausted_attempts() -> None:
    policy = RetryPolicy(base_ms=100, cap_ms=1_000, max_attempts=3)
    rng = random.Random(1)
    assert decide_retry(policy, 1, "permanent", rng).reason == "permanent_error"
    assert decide_retry(policy, 2, "retryable", rng).action == "retry"
    last = decide_retry(policy, 3, "retryable", rng)
    assert (last.action, last.reason, last.delay_ms) == (
        "dead_letter",
        "max_attempts_exhausted",
        None,
    )
    assert policy.ceiling_ms(10_000) == 1_000  # no overflow for huge attempt numbers


def test_retry_policy_validation() -> None:
    with pytest.raises(InvalidPolicy, match="maxAttempts: 0 is below 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(InvalidPolicy, match=r"retry.capMs: 10 is below the base 100"):
        RetryPolicy(base_ms=100, cap_ms=10)


# -- period -----------------------------------------------------------------------------


def test_period_is_from_the_previous_slot_to_this_one_across_dst() -> None:
    daily = compile_schedule(parse_schedule(cron="30 2 * * *", timezone="America/New_York"))
    shifted = 1_710_054_000_000  # 2024-03-10T07:00:00Z = 03:00 EDT, the shifted 02:30
    start, end = period_of(daily, shifted)
    assert (start, end) == (1_710_055_800_000 - 86_400_000, shifted)  # 2024-03-09T07:30Z
    with pytest.raises(NotAnOccurrence):
        period_of(daily, shifted + 1)
    one_off = compile_schedule(parse_schedule(run_at="2030-01-01T00:00:00Z"))
    assert period_of(one_off, 1_893_456_000_000) == (1_893_456_000_000, 1_893_456_000_000)


def test_payload_template_renders_iso_utc_instants() -> None:
    text = render_payload_template(
        '{"from": "{{ periodStart }}", "to": "{{periodEnd}}", "at": "{{  scheduledTime }}"}',
        period_start_ms=T0 - 86_400_000,
        period_end_ms=T0,
        scheduled_ms=T0 + 1,
    )
    assert text == (
        '{"from": "2027-01-14T08:00:00Z", "to": "2027-01-15T08:00:00Z", '
        '"at": "2027-01-15T08:00:00.001Z"}'
    )
    with pytest.raises(InvalidInput, match=r"unknown placeholder \{\{ tomorrow \}\}"):
        render_payload_template(
            "{{ tomorrow }}", period_start_ms=0, period_end_ms=0, scheduled_ms=0
        )
