"""The last successes the watchdog keeps past its events' retention (decision 0189): which
jobs' are kept, their record, and a restore that folds them as a replay of the events does."""

from __future__ import annotations

from tests.unit.core.watchdog.test_watchdog_golden import T0, S, definition, event
from tickwheel.core.watchdog import Observed, WatchdogState
from tickwheel.services.watchdog.records import CHECKPOINT_KEY, checkpoint_record
from tickwheel.services.watchdog.remembered import (
    REMEMBERED_MIN_INTERVAL_MS,
    RememberedSuccess,
    parse_success,
    success_record,
    to_remember,
)
from tickwheel.topology import topic as declared_topic

DAY = 86_400 * S


def folded(*observed: Observed) -> WatchdogState:
    state = WatchdogState()
    for item in observed:
        state.apply(item)
    return state


def test_a_kept_success_reads_back_as_it_was_written() -> None:
    success = RememberedSuccess("job-1/with:odd chars", T0 + 61 * S, T0)
    assert parse_success(success_record(success)) == success


def test_a_checkpoint_record_is_no_kept_success() -> None:
    assert parse_success(checkpoint_record({"t:0": 5}, T0, T0)) is None
    assert success_record(RememberedSuccess("x", T0, T0))["alert_id"] != CHECKPOINT_KEY


def test_only_jobs_expected_a_day_or_more_apart_are_kept() -> None:
    state = folded(
        definition("weekly", "0 0 * * 0", emi="8d"),
        definition("daily", "0 3 * * *", emi=None),  # derived: a day plus grace
        definition("minutely", "* * * * *", emi="90s"),
        *(event(j, T0, "succeeded", T0 + 5 * S) for j in ("weekly", "daily", "minutely")),
    )
    kept = list(to_remember(state.facts.jobs, {"weekly", "daily", "minutely", "unknown"}, 0))
    assert kept == [RememberedSuccess("daily", T0 + 5 * S, T0),
                    RememberedSuccess("weekly", T0 + 5 * S, T0)]  # fmt: skip


def test_a_job_without_a_success_or_deleted_is_not_kept() -> None:
    state = folded(
        definition("never", "0 0 * * 0", emi="8d"),
        definition("gone", "0 0 * * 0", emi="8d"),
        event("gone", T0, "succeeded", T0 + 5 * S),
        Observed("definition", "gone", None),
    )
    assert list(to_remember(state.facts.jobs, {"never", "gone"}, 0)) == []


def test_a_restored_success_and_a_replay_of_older_events_give_the_newest() -> None:
    # The restore folds the kept success before the replay; the replay's older success (and a
    # newer one) fold into the same max in either order.
    kept = RememberedSuccess("weekly", T0 + 7 * DAY, T0 + 7 * DAY - 60 * S)
    for newer_first in (False, True):
        state = folded(definition("weekly", "0 0 * * 0", emi="8d"))
        job = state.facts.job("weekly")
        older = event("weekly", T0, "succeeded", T0 + 5 * S)
        if newer_first:
            job.succeeded(kept.at, kept.slot)
            state.apply(older)
        else:
            state.apply(older)
            job.succeeded(kept.at, kept.slot)
        assert (job.last_success_ms, job.last_success_slot) == (kept.at, kept.slot)


def test_the_kept_interval_is_well_inside_the_events_retention() -> None:
    # A job expected more often than this whose last success has aged out of the events is
    # overdue by most of the retention: its incident is open, restored, and stays open.
    retention = declared_topic("executions.events").retention_ms
    assert 0 < REMEMBERED_MIN_INTERVAL_MS <= retention / 2
