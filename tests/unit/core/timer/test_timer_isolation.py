"""Nothing one job does reaches its partition: the holes of issue 16 (B1, B3-B6, B11, B13, B14),
each driven through one partition's scheduler with a fake clock (millisecond arguments)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.unit.core.timer.test_timer_executions import LEASE_MS, _worker_event
from tests.unit.core.timer.test_timer_scheduler import T0, _job
from tickwheel.core.definition import MAX_BACKFILL
from tickwheel.core.timer.commands import RejectedCommand
from tickwheel.core.timer.executions import LEASE_GRACE_MS
from tickwheel.services.timer.scheduler import PartitionTimer

DISPATCH_MS = 600_000


def _timer(**kwargs: Any) -> PartitionTimer:
    kwargs.setdefault("dispatch_timeout_ms", DISPATCH_MS)
    return PartitionTimer(0, 3_600_000, 10, T0, 10_000, rng=random.Random(3), **kwargs)


def _raw_record(job_id: str, **fields: Any) -> dict[str, Any]:
    """A definition as a non-SDK producer could publish it (the SDK would refuse it)."""
    return {**_job(job_id, cron="* * * * *"), **fields}


class _BrokenSchedule:
    """A schedule whose search raises: a stand-in for any bug one job could trigger."""

    nominal_period_ms = 60_000

    def next_after(self, t_ms: int) -> int:
        raise RuntimeError("boom")

    def prev_before(self, t_ms: int) -> int:
        raise RuntimeError("boom")


def test_a_template_that_does_not_render_skips_its_slot_and_the_others_fire() -> None:
    timer = _timer()
    timer.load_definition("bad", _raw_record("bad", payloadTemplate='{"d": "{{ period_start }}"}'))
    timer.load_definition("good", _job("good", cron="* * * * *"))
    timer.finish_restore(T0)
    emission = timer.tick(T0 + 60_000)
    assert [r["job_id"] for r in emission.requests] == ["good"]
    [skipped] = emission.events
    assert (skipped["job_id"], skipped["event_type"]) == ("bad", "skipped")
    assert skipped["reason"].startswith("invalid_request:") and "period_start" in skipped["reason"]
    # Every later slot is recorded the same way; the job's state moves on with them.
    later = timer.tick(T0 + 120_000)
    assert [e["scheduled_time"] for e in later.events] == [T0 + 120_000]
    assert later.states["bad"]["last_scheduled_time"] == T0 + 120_000


def test_a_restore_over_a_job_that_raises_serves_the_partition() -> None:
    timer = _timer()
    timer.load_definition("bad", _raw_record("bad", payloadTemplate="{{ nope }}"))
    timer.load_definition("good", _job("good", cron="* * * * *"))
    # Both owe an hour of catch-up: the bad one's every slot is recorded as skipped.
    for job_id in ("bad", "good"):
        timer.load_state(job_id, {"last_scheduled_time": T0 - 3_600_000, "last_fire_time": None})
    emission = timer.finish_restore(T0)
    assert timer.serving
    assert {r["job_id"] for r in emission.requests} == {"good"}
    assert {e["job_id"] for e in emission.events} == {"bad"}


def test_a_job_whose_decision_raises_is_set_aside_with_a_dead_letter() -> None:
    timer = _timer()
    timer.load_definition("bad", _job("bad", cron="* * * * *"))
    timer.load_definition("good", _job("good", cron="* * * * *"))
    timer.finish_restore(T0)
    timer.jobs["bad"].schedule = _BrokenSchedule()  # type: ignore[assignment]
    emission = timer.tick(T0 + 60_000)
    assert [r["job_id"] for r in emission.requests] == ["good"]
    assert [(e["job_id"], e["event_type"]) for e in emission.events] == [("bad", "skipped")]
    [letter] = emission.dead_letters
    assert letter["job_id"] == "bad" and "boom" in letter["reason"]
    assert timer.jobs["bad"].handle is None, "out of the wheel until it is edited or restored"
    assert [r["job_id"] for r in timer.tick(T0 + 120_000).requests] == ["good"]
    # A restore meets the same failure without raising.
    heir = _timer()
    heir.load_definition("bad", _job("bad", cron="* * * * *"))
    heir.jobs["bad"].schedule = _BrokenSchedule()  # type: ignore[assignment]
    heir.load_definition("good", _job("good", cron="* * * * *"))
    restored = heir.finish_restore(T0)
    assert [d["job_id"] for d in restored.dead_letters] == ["bad"] and heir.serving


def test_commands_that_cannot_be_carried_out_are_rejected_with_a_reason() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="* * * * *"))
    timer.finish_restore(T0)
    cases = {
        "no job 'ghost'": {"job_id": "ghost", "kind": "trigger", "requested_at": T0},
        "unknown kind 'rerun'": {"job_id": "a", "kind": "rerun", "requested_at": T0},
        "needs range_start": {"job_id": "a", "kind": "backfill", "requested_at": T0},
        "at or before it starts": {"job_id": "a", "kind": "backfill", "requested_at": T0,
                                   "range_start": T0, "range_end": T0 - 60_000},
        f"more than {MAX_BACKFILL}": {"job_id": "a", "kind": "backfill", "requested_at": T0,
                                      "range_start": T0 - (MAX_BACKFILL + 1) * 60_000,
                                      "range_end": T0},
    }  # fmt: skip
    for expected, command in cases.items():
        with pytest.raises(RejectedCommand, match=expected):
            timer.command({"command_id": "c1", **command}, T0)


def test_a_request_never_leased_is_reissued_then_dead_lettered_and_frees_its_job() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/5 * * * *", overlapPolicy="skip", maxAttempts=2))
    timer.finish_restore(T0)
    [first] = timer.tick(T0 + 300_000).requests
    assert timer.tick(T0 + 600_000).events[0]["reason"] == "overlap:previous_run_still_running"
    # Past the dispatch deadline: attempt 2, and the failed attempt is recorded.
    expired = timer.tick(first["requested_at"] + DISPATCH_MS + 10)
    [second] = [r for r in expired.requests if r["execution_id"] == first["execution_id"]]
    assert second["attempt"] == 2
    failed = [e for e in expired.events if e["event_type"] == "failed"]
    assert [e["reason"] for e in failed] == ["dispatch_timeout"]
    assert "was not leased within" in failed[0]["error"]
    # Attempts exhausted: dead-lettered, and the skip job runs again at its next slot.
    gone = timer.tick(second["requested_at"] + DISPATCH_MS + 10)
    assert [d["reason"] for d in gone.dead_letters] == ["dispatch_timeout_max_attempts"]
    assert first["execution_id"] not in timer.executions.in_flight
    # The slot that came due meanwhile is no longer skipped: the job runs again.
    [again] = gone.requests
    assert again["execution_id"] != first["execution_id"] and again["attempt"] == 1


def test_a_leased_request_has_no_dispatch_deadline_any_more() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z"))
    timer.finish_restore(T0)
    [request] = timer.tick(T0 + 60_000).requests
    for now in range(T0 + 61_000, T0 + 60_000 + 2 * DISPATCH_MS, 10_000):
        timer.on_execution_event(_worker_event(request, "heartbeat", now), now)
        assert timer.tick(now).requests == []


@pytest.mark.parametrize("policy", ["coalesce", "skip", "catch_up"])
def test_a_backlog_behind_a_tenant_cap_obeys_the_misfire_policy(policy: str) -> None:
    timer = _timer(tenant_max_in_flight=1, dispatch_timeout_ms=36_000_000)
    timer.load_definition("long", _job("long", runAt="2027-01-15T08:00:01Z"))
    timer.load_definition(
        "every", _job("every", cron="* * * * * *", misfirePolicy=policy, maxCatchUp=5)
    )
    timer.finish_restore(T0)
    [running] = timer.tick(T0 + 1_000).requests  # "long" holds the tenant's one slot
    assert running["job_id"] == "long"
    skipped = []
    for now in range(T0 + 2_000, T0 + 3_600_000, 1_000):
        emission = timer.tick(now)
        assert emission.requests == []
        skipped.extend(emission.events)
        assert timer.backlog <= 5, "the backlog is bounded by the job's policy"
    end = T0 + 3_600_000
    timer.on_execution_event(_worker_event(running, "succeeded", end), end)
    fired = []
    for now in range(end, end + 20_000, 1_000):
        fired.extend(timer.tick(now).requests)
        for request in timer.executions.in_flight.copy().values():
            done = _worker_event(request.request, "succeeded", now)
            timer.on_execution_event(done, now)
    # What came due while capped, and the slot due at the release (which the gap's run joins).
    released = [r for r in fired if r["scheduled_time"] <= end]
    if policy == "catch_up":
        assert len(released) == 5  # maxCatchUp slots, the oldest dropped first
    elif policy == "coalesce":
        assert len(released) == 1  # one run for the whole gap
    else:
        # None fired later than the grace period: those are missed, as after an outage.
        assert all(r["requested_at"] - r["scheduled_time"] <= 60_000 for r in released)
    # Every slot of the hour is accounted for: fired, or recorded as skipped.
    slots = {r["scheduled_time"] for r in released} | {e["scheduled_time"] for e in skipped}
    assert slots >= set(range(T0 + 2_000, end, 1_000)) - {s for s in range(end - 6_000, end)}


def test_a_lease_runs_on_the_owners_clock_whatever_the_workers_says() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z", maxAttempts=3))
    timer.finish_restore(T0)
    [request] = timer.tick(T0 + 60_000).requests
    now = T0 + 60_100
    ahead = now + 3_600_000  # a worker whose clock is an hour fast
    timer.on_execution_event(_worker_event(request, "leased", ahead), now)
    expiry = now + LEASE_MS + LEASE_GRACE_MS
    assert timer.tick(expiry - 10).requests == []
    [second] = timer.tick(expiry + 10).requests
    assert second["attempt"] == 2, "a dead worker is replaced a lease after it went quiet"
    # One an hour slow neither makes a live lease expire at once.
    behind = expiry + 10 - 3_600_000
    timer.on_execution_event(_worker_event(second, "leased", behind), expiry + 10)
    assert timer.tick(expiry + 10 + LEASE_MS).requests == []


def test_two_writes_of_one_version_resolve_as_compaction_does() -> None:
    timer = _timer()
    v1 = _job("a", cron="0 * * * *")
    timer.load_definition("a", v1)
    timer.finish_restore(T0)
    first_v2 = {**v1, "version": 2, "updatedAt": T0 + 1, "cron": "*/5 * * * *"}
    second_v2 = {**v1, "version": 2, "updatedAt": T0 + 2, "cron": "*/10 * * * *"}
    timer.apply_definition("a", first_v2, T0 + 1)
    timer.apply_definition("a", second_v2, T0 + 2)
    # A restore loads what compaction keeps: the later record. Live and restored agree.
    heir = _timer()
    heir.load_definition("a", first_v2)
    heir.load_definition("a", second_v2)
    heir.finish_restore(T0 + 2)
    assert timer.jobs["a"].schedule == heir.jobs["a"].schedule
    assert timer.jobs["a"].next_ms == heir.jobs["a"].next_ms == T0 + 600_000
    # The same record read twice changes nothing.
    assert not timer.apply_definition("a", second_v2, T0 + 3)


def test_edits_inside_the_horizon_leave_no_entries_behind() -> None:
    timer = _timer()
    record = _job("a", cron="* * * * *")
    timer.load_definition("a", record)
    timer.finish_restore(T0)
    for version in range(2, 10_002):
        edit = {**record, "version": version, "updatedAt": T0 + version}
        timer.apply_definition("a", edit, T0 + 1_000)
    assert len(timer.horizon.targets) <= 2


def test_an_invalid_edit_keeps_the_old_schedule() -> None:
    timer = _timer()
    record = _job("a", cron="* * * * *")
    timer.load_definition("a", record)
    timer.finish_restore(T0)
    broken = {**record, "version": 2, "cron": "not a cron", "updatedAt": T0 + 1}
    with pytest.raises(ValueError):
        timer.apply_definition("a", broken, T0 + 1)
    assert [r["job_id"] for r in timer.tick(T0 + 60_000).requests] == ["a"]


def test_a_templates_date_filter_renders_in_the_jobs_zone_at_fire_time() -> None:
    # 00:30 in Auckland (UTC+13 in January) is still the previous day in UTC.
    timer = _timer()
    template = '{"day": "{{ scheduledTime | date }}", "at": "{{ scheduledTime }}"}'
    timer.load_definition(
        "nz", _job("nz", cron="30 0 * * *", timezone="Pacific/Auckland", payloadTemplate=template)
    )
    timer.finish_restore(T0)
    slot = timer.jobs["nz"].next_ms
    assert slot is not None
    [request] = timer.tick(slot).requests
    payload = json.loads(request["payload"])
    assert payload["at"].startswith("2027-01-15T11:30:00")
    assert payload["day"] == "2027-01-16"


def test_a_jobs_max_run_time_travels_in_its_requests() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z", maxRunTime="90m"))
    timer.load_definition("b", _job("b", runAt="2027-01-15T08:01:00Z"))
    timer.finish_restore(T0)
    by_job = {r["job_id"]: r for r in timer.tick(T0 + 60_000).requests}
    assert by_job["a"]["max_run_seconds"] == 5_400
    assert by_job["b"]["max_run_seconds"] is None
    with pytest.raises(ValueError, match="maxRunTime"):
        _job("c", runAt="2027-01-15T08:01:00Z", maxRunTime="8d")


def test_attempts_handed_back_by_workers_without_the_handler_spend_none_of_the_jobs() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z", maxAttempts=2))
    timer.finish_restore(T0)
    [request] = timer.tick(T0 + 60_000).requests
    now = T0 + 60_000
    for _ in range(5):  # a rolling deploy: old workers lack the type
        now += 100
        timer.on_execution_event(_worker_event(request, "leased", now), now)
        handed_back = {**_worker_event(request, "failed", now, error="no handler"),
                       "reason": "no_handler", "error_kind": "retryable"}  # fmt: skip
        emission = timer.on_execution_event(handed_back, now)
        assert [e["reason"] for e in emission.events] == ["no_handler"]
        assert not emission.dead_letters
        now += 16_000
        [request] = timer.tick(now).requests
    assert request["attempt"] == 6
    # A restore keeps the count: the next real failure is the job's first.
    state = timer.state_of("a", now)
    heir = _timer()
    heir.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z", maxAttempts=2))
    heir.load_state("a", state)
    heir.finish_restore(now)
    heir.on_execution_event(_worker_event(request, "leased", now + 10), now + 10)
    failed = heir.on_execution_event(
        _worker_event(request, "failed", now + 20, error="x", error_kind="retryable"), now + 20
    )
    assert [e["event_type"] for e in failed.events] == ["retry_scheduled"]
    assert not failed.dead_letters


def test_a_bounded_jobs_first_slot_covers_its_grid_period() -> None:
    timer = _timer()
    record = _job("b", cron="0 * * * *", startAt="2027-01-15T09:30:00Z", maxRuns=2)
    timer.load_definition("b", record)
    timer.finish_restore(T0)
    [first] = timer.tick(T0 + 2 * 3_600_000).requests
    assert first["scheduled_time"] == T0 + 2 * 3_600_000  # 10:00, the first slot after 09:30
    assert first["period_start"] == T0 + 3_600_000  # 09:00: its hour, not an empty period

    def first_attempts(now: int) -> list[int]:
        return [r["scheduled_time"] for r in timer.tick(now).requests if r["attempt"] == 1]

    assert first_attempts(T0 + 3 * 3_600_000) == [T0 + 3 * 3_600_000]
    assert first_attempts(T0 + 4 * 3_600_000) == []  # maxRuns: 2


def test_a_jobs_queue_travels_in_its_requests() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z", queue="batch"))
    timer.load_definition("b", _job("b", runAt="2027-01-15T08:01:00Z", queue="default"))
    timer.finish_restore(T0)
    by_job = {r["job_id"]: r for r in timer.tick(T0 + 60_000).requests}
    assert (by_job["a"]["queue"], by_job["b"]["queue"]) == ("batch", None)
    with pytest.raises(ValueError, match="queue"):
        _job("c", runAt="2027-01-15T08:01:00Z", queue="Not A Queue!")
