"""The deadline wheel (decision 0133) decides exactly what the full scan decides: the same log,
evaluated at the same watermarks by a state that visits only the jobs whose deadline came and
by one that visits every job, gives identical transitions — on random jobs, outcomes, edits
(resumes, disables past review, shorter intervals, deletes), broken chains and gaps between
evaluations (the watchdog's own downtime)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tests.unit.core.watchdog.test_watchdog_golden import T0, S, definition, event, healthy_run
from tests.unit.core.watchdog.test_watchdog_properties import OUTCOMES, THRESHOLDS, slot_log
from tickwheel.core.watchdog import Observed, Thresholds, WatchdogState, evaluate
from tickwheel.core.watchdog.wheel import bucket_key

CRONS = ("*/2 * * * * *", "*/3 * * * * *", "*/5 * * * * *", "0/7 * * * * *")
EMIS = ("4s", "6s", "9s", "20s", None)


def job(job_id: str, rng: random.Random, version: int, at: int, **fields: Any) -> Observed:
    base = definition(job_id, rng.choice(CRONS), version=version, created=T0 - 500,
                      updated=at, emi=rng.choice(EMIS))  # fmt: skip
    assert base.record is not None
    return Observed("definition", job_id, {**base.record, **fields})


def edit(job_id: str, rng: random.Random, version: int, at: int) -> Observed:
    """A random new version: resumed, disabled (with a review date), a run time, a calendar
    nobody defined (a broken chain), or deleted."""
    choice = rng.randrange(6)
    if choice == 0:
        return Observed("definition", job_id, None)
    if choice == 1:
        return job(job_id, rng, version, at, enabled=False, disabledOwner="ops",
                   disabledReviewBy=at + rng.randrange(1, 30) * S)  # fmt: skip
    if choice == 2:
        return job(job_id, rng, version, at, minRunTime="1s", maxRunTime="3s")
    if choice == 3:
        return job(job_id, rng, version, at, calendar="nobody-defined-it", businessDays="skip")
    return job(job_id, rng, version, at)


def random_log(seed: int, jobs: int, slots: int) -> list[tuple[int, Observed]]:
    rng = random.Random(seed)
    log: list[tuple[int, Observed]] = []
    for n in range(jobs):
        job_id = f"job-{n}"
        log.append((T0 - 500, job(job_id, rng, 1, T0 - 500)))
        version = 1
        for i in range(slots):
            slot = T0 + 2 * S * (i + 1)
            for observed in slot_log(job_id, slot, rng.choice(OUTCOMES)):
                assert observed.record is not None
                record = observed.record
                log.append((int(record.get("event_time") or record.get("requested_at")), observed))
            if rng.random() < 0.08:
                version += 1
                log.append((slot + 700, edit(job_id, rng, version, slot + 700)))
            if rng.random() < 0.05:  # a short run, then an ordinary one
                log.extend((slot + 900 + k, o) for k, o in
                           enumerate(healthy_run(job_id, slot, slot + 800, run_ms=150)))  # fmt: skip
    return log


def replay(
    log: list[tuple[int, Observed]], marks: list[int], state: WatchdogState, thresholds: Thresholds
) -> list[dict[str, Any]]:
    timed = sorted(log, key=lambda pair: pair[0])
    out, i = [], 0
    for mark in marks:
        while i < len(timed) and timed[i][0] <= mark:
            state.apply(timed[i][1])
            i += 1
        out.extend(t.record() for t in evaluate(state, mark, thresholds)[0])
    return out


@PROPS
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 6),
    slots=st.integers(3, 25),
    gaps=st.lists(st.sampled_from((300, 1000, 1000, 1700, 9000, 40_000)), min_size=5, max_size=60),
    grace=st.sampled_from((THRESHOLDS.derived_grace_ms, 2 * S)),
)
def test_the_wheel_gives_the_full_scans_transitions(
    seed: int, jobs: int, slots: int, gaps: list[int], grace: int
) -> None:
    log = random_log(seed, jobs, slots)
    marks, mark = [], T0 - S
    for gap in gaps:
        mark += gap
        marks.append(mark)
    thresholds = replace(THRESHOLDS, derived_grace_ms=grace)
    full = replay(log, marks, WatchdogState(wheel=None), thresholds)
    wheeled = replay(log, marks, WatchdogState(), thresholds)
    assert wheeled == full


def test_a_job_filed_far_ahead_is_still_raised_on_the_tick_its_deadline_comes() -> None:
    state = WatchdogState()
    state.apply(definition("far", "0 0 * * * *", emi="2h"))  # hourly, held to two hours
    for mark in range(T0 + S, T0 + 2 * 3600 * S, 97 * S):
        assert evaluate(state, mark, THRESHOLDS)[0] == []
    deadline = T0 + 2 * 3600 * S
    assert evaluate(state, deadline - 1, THRESHOLDS)[0] == []
    [opened] = evaluate(state, deadline, THRESHOLDS)[0]
    assert (opened.incident.kind, opened.transition) == ("job_overdue", "opened")


def test_a_shorter_interval_from_an_edit_is_seen_at_once() -> None:
    state = WatchdogState()
    state.apply(definition("j", emi="1h"))
    assert evaluate(state, T0 + 10 * S, THRESHOLDS)[0] == []  # filed an hour ahead
    state.apply(definition("j", version=2, emi="6s", updated=T0 + 11 * S))
    [opened] = evaluate(state, T0 + 12 * S, THRESHOLDS)[0]
    assert opened.incident.subject == "j" and opened.transition == "opened"


def test_a_success_moves_the_deadline_later_without_refiling() -> None:
    state = WatchdogState()
    state.apply(definition("j"))  # every 2 s, held to 6 s
    marks = range(T0 + S, T0 + 60 * S, S)
    for mark in marks:
        slot = mark - mark % (2 * S)
        for observed in healthy_run("j", slot, slot):
            state.apply(observed)
        assert evaluate(state, mark + 500, THRESHOLDS)[0] == []
    wheel = state.wheel
    assert wheel is not None and wheel._entries <= 2  # one job, never piled up


def test_bucket_keys_are_after_the_watermark_and_at_or_before_the_deadline() -> None:
    rng = random.Random(7)
    for _ in range(10_000):
        watermark = rng.randrange(0, 2**41)
        deadline = watermark + rng.choice((1, 2, 3, rng.randrange(1, 2**35)))
        key = bucket_key(deadline, watermark)
        assert watermark < key <= deadline
        # Coarse when far: at most half the distance early.
        assert deadline - key <= (deadline - watermark) // 2


def test_a_long_running_attempt_is_found_without_its_job_due() -> None:
    state = WatchdogState()
    base = definition("r", emi="1h")
    assert base.record is not None
    state.apply(Observed("definition", "r", {**base.record, "maxRunTime": "2s"}))
    slot = T0 + 2 * S
    state.apply(event("r", slot, "leased", slot + 10))
    got = [t.incident.kind for t in evaluate(state, slot + 40 * S, THRESHOLDS)[0]]
    assert got == ["run_too_long"]
