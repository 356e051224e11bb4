"""Golden cases for the evaluator's rules beyond overdue and broken chain: bounded jobs that
finished, runs too long or too short, and jobs disabled past their review date."""

from __future__ import annotations

from typing import Any

from tests.unit.core.test_watchdog_golden import (
    QUICK,
    T0,
    S,
    batched,
    definition,
    details,
    healthy_run,
    kinds,
    run,
)
from tickwheel.core.watchdog import Observed


def bounded(job_id: str, **fields: Any) -> Observed:
    base = definition(job_id, **{k: fields.pop(k) for k in ("version", "enabled", "updated",
                                                             "created") if k in fields})  # fmt: skip
    assert base.record is not None
    return Observed("definition", job_id, {**base.record, **fields})


def healthy_slots(job_id: str, slots: list[int]) -> list[Observed]:
    return [o for slot in slots for o in healthy_run(job_id, slot, slot)]


# -- a job past its end is finished, not broken -----------------------------------------------
def test_a_job_past_its_end_at_raises_neither_overdue_nor_broken_chain() -> None:
    end = T0 + 10 * S
    log = [bounded("e", endAt=end), *healthy_slots("e", list(range(T0 + 2 * S, end + 1, 2 * S)))]
    assert run(batched(log, T0 - S, T0 + 120 * S, S), QUICK) == []


def test_a_job_that_ran_its_max_runs_is_finished() -> None:
    log = [bounded("m", maxRuns=3), *healthy_slots("m", [T0 + 2 * S, T0 + 4 * S, T0 + 6 * S])]
    assert run(batched(log, T0 - S, T0 + 120 * S, S), QUICK) == []


def test_a_bounded_job_whose_last_runs_never_came_is_overdue_all_the_same() -> None:
    # The end has passed but the slots before it were owed and never ran (a stopped timer).
    got = run(batched([bounded("e", endAt=T0 + 10 * S)], T0 - S, T0 + 30 * S, S), QUICK)
    assert kinds(got)[0] == ("job_overdue", "e", "opened")
    assert "resolved" not in {t.transition for t in got}
    assert all(s["diagnosis"] == "never_fired" for s in details(got[0])["slots"])


def test_a_job_created_after_its_end_owes_nothing() -> None:
    assert run(batched([bounded("e", endAt=T0 - 60 * S)], T0 - S, T0 + 60 * S, S), QUICK) == []


def test_nothing_is_owed_before_start_at() -> None:
    start = T0 + 60 * S
    log = [bounded("s", startAt=start),
           *healthy_slots("s", list(range(start, T0 + 120 * S, 2 * S)))]  # fmt: skip
    assert run(batched(log, T0 - S, T0 + 118 * S, S), QUICK) == []
    late = run(batched([bounded("s", startAt=start)], T0 - S, T0 + 70 * S, S), QUICK)
    assert kinds(late) == [("job_overdue", "s", "opened")]
    assert late[0].at == start + 6 * S and details(late[0])["since"] == "start_at"


def test_an_interval_schedule_is_watched_like_a_cron_one() -> None:
    every = bounded("i", cron=None, every="3s", phase=T0)
    got = run(batched([every], T0 - S, T0 + 10 * S, S), QUICK)
    assert kinds(got) == [("job_overdue", "i", "opened")]
