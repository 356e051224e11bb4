"""Golden cases: the watchdog recomputes what a business-day job owed with the holiday
calendars, as the timer does (decision 0107): a slot skipped for a bank holiday is not owed, a
moved slot is owed at its moved time, and a calendar folded before or after its jobs, or
changed, gives the same answers."""

from __future__ import annotations

from typing import Any

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    Observed,
    S,
    batched,
    definition,
    details,
    healthy_run,
    kinds,
    run,
)
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.core.watchdog import WatchdogState

HOUR, DAY = 3600 * S, 86_400 * S
# T0 is Friday 2027-01-15 08:00Z; Monday 2027-01-18 is the bank's holiday.
HOLIDAY = "2027-01-18"


def at(text: str) -> int:
    return parse_iso_ms(text, "at")


def calendar(name: str = "bank", dates: tuple[str, ...] = (HOLIDAY,)) -> Observed:
    return Observed("calendar", name, {"name": name, "version": 1, "dates": list(dates),
                                       "weekend": [0, 6], "description": None})  # fmt: skip


def business_job(job_id: str, cron: str, rule: str, emi: str, created: int) -> Observed:
    base = definition(job_id, cron, created=created, emi=emi)
    assert base.record is not None
    record: dict[str, Any] = {**base.record, "calendar": "bank", "businessDays": rule}
    return Observed("definition", job_id, record)


def healthy(job_id: str, slots: list[int]) -> list[Observed]:
    return [o for slot in slots for o in healthy_run(job_id, slot, slot)]


def test_a_business_day_job_across_a_bank_holiday_raises_nothing() -> None:
    # Weekdays at 09:00, skipping the bank's holidays, held to 3 days and an hour: Friday's
    # success, then Monday skipped, Tuesday run. Friday + 3d1h is Monday 10:00, but Monday
    # owed nothing: the interval runs out only an hour after Tuesday's slot.
    job = business_job("pay", "0 9 * * 1-5", "skip", "3d1h", created=T0 - DAY)
    slots = [at("2027-01-15T09:00:00Z"), at("2027-01-19T09:00:00Z"),
             at("2027-01-20T09:00:00Z")]  # fmt: skip
    log = [calendar(), job, *healthy("pay", slots)]
    assert run(batched(log, T0, T0 + 6 * DAY, 10 * 60 * S), QUICK) == []


def test_without_the_calendar_the_same_log_is_overdue_on_the_holiday() -> None:
    # The same job and runs, but no calendar folded: Monday's slot is owed (the job names a
    # calendar the watchdog does not know, so it owes nothing at all: a broken chain), and
    # with weekends only it is owed and missed. What the first test proves is the calendar.
    job = definition("pay", "0 9 * * 1-5", created=T0 - DAY, emi="3d1h")
    assert job.record is not None
    weekends_only = Observed("definition", "pay", {**job.record, "businessDays": "skip"})
    slots = [at("2027-01-15T09:00:00Z"), at("2027-01-19T09:00:00Z")]
    log = [weekends_only, *healthy("pay", slots)]
    got = run(batched(log, T0, at("2027-01-18T12:00:00Z"), 10 * 60 * S), QUICK)
    assert kinds(got) == [("job_overdue", "pay", "opened")]
    # Friday's success (09:00:00.320) + 3d1h, seen at the next 10-minute evaluation.
    assert details(got[0])["deadline"] == at("2027-01-18T10:00:00.320Z")
    assert got[0].at == at("2027-01-18T10:10:00Z")
    assert [s["slot"] for s in details(got[0])["slots"]] == [at("2027-01-18T09:00:00Z")]


def test_a_moved_slot_is_owed_at_its_moved_time() -> None:
    # Mondays at 09:00, moved to the next business day: the holiday's slot is Tuesday 09:00.
    # Last success the Monday before; held to 7d1h. Nothing runs on the moved slot: the
    # alert opens an hour after Tuesday 09:00, never at Monday 10:00, naming Tuesday's slot.
    job = business_job("wk", "0 9 * * 1", "next", "7d1h", created=at("2027-01-10T00:00:00Z"))
    log = [calendar(), job, *healthy("wk", [at("2027-01-11T09:00:00Z")])]
    start = at("2027-01-11T00:00:00Z")
    got = run(batched(log, start, at("2027-01-19T12:00:00Z"), 10 * 60 * S), QUICK)
    assert kinds(got) == [("job_overdue", "wk", "opened")]
    assert got[0].at == at("2027-01-19T10:10:00Z")
    evidence = details(got[0])
    assert evidence["deadline"] == at("2027-01-19T10:00:00.320Z")
    assert [s["slot"] for s in evidence["slots"]] == [at("2027-01-19T09:00:00Z")]
    assert evidence["slots"][0]["diagnosis"] == "never_fired"
    # ...and the moved slot run at its moved time raises nothing.
    ran = [*log, *healthy("wk", [at("2027-01-19T09:00:00Z")])]
    assert run(batched(ran, start, at("2027-01-22T00:00:00Z"), 10 * 60 * S), QUICK) == []


def test_a_calendar_folded_after_its_jobs_or_changed_gives_the_same_answers() -> None:
    job = business_job("pay", "0 9 * * 1-5", "skip", "3d1h", created=T0 - DAY)
    slots = [at("2027-01-15T09:00:00Z"), at("2027-01-19T09:00:00Z")]
    end = at("2027-01-19T12:00:00Z")
    before = run(batched([calendar(), job, *healthy("pay", slots)], T0, end, HOUR), QUICK)
    after = run(batched([job, calendar(), *healthy("pay", slots)], T0, end, HOUR), QUICK)
    assert before == after == []
    # A calendar first without the holiday, then edited to add it, before the evaluation.
    state = WatchdogState()
    for observed in (calendar(dates=()), job, calendar()):
        state.apply(observed)
    assert run(batched(healthy("pay", slots), T0, end, HOUR), QUICK, state) == []
    # The edit removing it again makes Monday owed: overdue at Monday 10:00.
    state = WatchdogState()
    for observed in (calendar(), job, calendar(dates=())):
        state.apply(observed)
    got = run(batched(healthy("pay", slots), T0, end, HOUR), QUICK, state)
    assert kinds(got)[:1] == [("job_overdue", "pay", "opened")]
    assert details(got[0])["deadline"] == at("2027-01-18T10:00:00.320Z")
