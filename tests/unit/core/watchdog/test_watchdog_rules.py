"""Golden cases for the evaluator's rules beyond overdue and broken chain: bounded jobs that
finished, runs too long or too short, and jobs disabled past their review date."""

from __future__ import annotations

from typing import Any

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    S,
    batched,
    definition,
    details,
    event,
    healthy_run,
    kinds,
    request,
    run,
)
from tickwheel.core.watchdog import Observed, Thresholds, WatchdogState


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


# -- runs too long and too short ----------------------------------------------------------------
def timed_run(job_id: str, slot: int, leased: int, succeeded: int | None) -> list[Observed]:
    log = [request(job_id, slot, slot + 5), event(job_id, slot, "leased", leased)]
    return log + ([event(job_id, slot, "succeeded", succeeded)] if succeeded else [])


def test_a_run_past_max_run_time_opens_and_its_end_resolves() -> None:
    thresholds = Thresholds(resolve_after_ms=0, update_every_ms=600 * S, run_grace_ms=S)
    defn = bounded("l", maxRunTime="5s", expectedMaxInterval="1h")
    slot = T0 + 2 * S
    got = run([(T0 + 3 * S, [defn, *timed_run("l", slot, T0 + 3 * S, None)]), (T0 + 8 * S, []),
               (T0 + 10 * S, [])], thresholds)  # fmt: skip
    assert kinds(got) == [("run_too_long", "l", "opened")]
    assert got[0].at == T0 + 10 * S  # leased at 3 s, 5 s allowed, 1 s of grace
    evidence = details(got[0])
    assert evidence["slot"] == slot and evidence["worker"] == "w1"
    state = WatchdogState()
    run([(T0 + 10 * S, [defn, *timed_run("l", slot, T0 + 3 * S, None)])], thresholds, state)
    done = run([(T0 + 12 * S, [event("l", slot, "succeeded", T0 + 11 * S)])], thresholds, state)
    assert kinds(done) == [("run_too_long", "l", "resolved")]
    assert details(done[0])["reason"] == "run_finished"


def test_a_run_shorter_than_min_run_time_opens_until_a_long_enough_one() -> None:
    defn = bounded("s", minRunTime="2s", expectedMaxInterval="1h")
    state = WatchdogState()
    got = run([(T0 + 5 * S, [defn, *timed_run("s", T0 + 2 * S, T0 + 2 * S, T0 + 2 * S + 40)])],
              QUICK, state)  # fmt: skip
    assert kinds(got) == [("run_too_short", "s", "opened")]
    assert details(got[0])["run_ms"] == 40 and details(got[0])["min_run_ms"] == 2000
    later = timed_run("s", T0 + 10 * S, T0 + 10 * S, T0 + 13 * S)
    assert kinds(run([(T0 + 14 * S, later)], QUICK, state)) == [("run_too_short", "s", "resolved")]


def test_run_lengths_are_unwatched_without_max_or_min_run_time() -> None:
    log = [bounded("n", expectedMaxInterval="1h"),
           *timed_run("n", T0 + 2 * S, T0 + 2 * S, T0 + 2 * S + 1),
           *timed_run("n", T0 + 4 * S, T0 + 4 * S, None)]  # fmt: skip
    assert run([(T0 + 1800 * S, log)], QUICK) == []


def test_a_job_edited_to_add_min_run_time_is_judged_by_the_run_it_had_before() -> None:
    # The run took 40 ms while the job declared no minimum; an evaluation passed (and pruned
    # what only a declared run time reads); then the job was edited to a 2 s minimum: its
    # newest run is too short all the same (decision 0134).
    state = WatchdogState()
    before = [bounded("e", expectedMaxInterval="1h"),
              *timed_run("e", T0 + 2 * S, T0 + 2 * S, T0 + 2 * S + 40)]  # fmt: skip
    assert run([(T0 + 5 * S, before)], QUICK, state) == []
    assert "e" not in state.facts.jobs.last_runs  # pruned: the job declared no run time
    edited = bounded("e", version=2, updated=T0 + 6 * S, expectedMaxInterval="1h",
                     minRunTime="2s")  # fmt: skip
    got = run([(T0 + 7 * S, [edited])], QUICK, state)
    assert kinds(got) == [("run_too_short", "e", "opened")]
    evidence = details(got[0])
    assert (evidence["slot"], evidence["run_ms"]) == (T0 + 2 * S, 40)
    assert evidence["succeeded_at"] == T0 + 2 * S + 40 and evidence["min_run_ms"] == 2000
    # A long enough run afterwards resolves it, as for a job that had the minimum all along.
    later = timed_run("e", T0 + 10 * S, T0 + 10 * S, T0 + 13 * S)
    assert kinds(run([(T0 + 14 * S, later)], QUICK, state)) == [("run_too_short", "e", "resolved")]


def test_the_run_kept_for_later_is_the_last_successes_in_any_order() -> None:
    runs = [*timed_run("o", T0 + 2 * S, T0 + 2 * S, T0 + 2 * S + 700),
            *timed_run("o", T0 + 4 * S, T0 + 4 * S, T0 + 4 * S + 30)]  # fmt: skip
    edited = bounded("o", version=2, updated=T0 + 9 * S, expectedMaxInterval="1h",
                     minRunTime="1s")  # fmt: skip
    for log in (runs, runs[::-1], runs[3:] + runs[:3]):
        state = WatchdogState()
        run([(T0 + 8 * S, [bounded("o", expectedMaxInterval="1h"), *log])], QUICK, state)
        got = run([(T0 + 10 * S, [edited])], QUICK, state)
        assert [details(t)["run_ms"] for t in got] == [30]


# -- disabled jobs -------------------------------------------------------------------------------
def disable(job_id: str, version: int, at: int, review_by: int | None) -> Observed:
    return bounded(job_id, version=version, enabled=False, updated=at, disabledBy="ana",
                   disabledOwner="team-billing", disabledReason="vendor outage",
                   disabledReviewBy=review_by)  # fmt: skip


def test_a_job_disabled_past_its_review_date_alerts_with_who_why_and_since() -> None:
    log = [definition("d"), disable("d", 2, T0 + 2 * S, T0 + 30 * S)]
    got = run(batched(log, T0 - S, T0 + 40 * S, S), QUICK)
    assert kinds(got) == [("disabled_past_review", "d", "opened")]
    assert got[0].at == T0 + 30 * S
    evidence = details(got[0])
    assert (evidence["owner"], evidence["reason"], evidence["by"]) == (
        "team-billing",
        "vendor outage",
        "ana",
    )
    assert evidence["since"] == T0 + 2 * S and evidence["review_by"] == T0 + 30 * S


def test_re_enabling_or_moving_the_review_date_resolves_it() -> None:
    base = [definition("d"), disable("d", 2, T0 + 2 * S, T0 + 30 * S)]
    state = WatchdogState()
    assert kinds(run([(T0 + 31 * S, base)], QUICK, state))[-1][2] == "opened"
    moved = disable("d", 3, T0 + 32 * S, T0 + 3600 * S)
    got = run([(T0 + 33 * S, [moved])], QUICK, state)
    assert kinds(got) == [("disabled_past_review", "d", "resolved")]
    assert details(got[0])["reason"] == "review_date_moved"
    # The disable began at version 2: moving the date does not restart "since".
    from tickwheel.core.watchdog.runs import disabled_report

    report = disabled_report(state.facts.jobs["d"])
    assert report is not None and report["since"] == T0 + 2 * S
    assert disabled_report(WatchdogState().facts.job("x")) is None


def test_a_disable_without_a_review_date_never_alerts() -> None:
    log = [definition("d"), disable("d", 2, T0 + 2 * S, None)]
    assert run(batched(log, T0 - S, T0 + 3600 * S, 60 * S), QUICK) == []
