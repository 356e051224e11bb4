"""The timer's per-partition decisions, driven by a fake clock (plain millisecond arguments)."""

from __future__ import annotations

from typing import Any

from tickwheel.core.timer.partition import MISFIRE_GRACE_MS
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z, a whole minute


def _timer(now: int = T0, max_batch: int = 10_000) -> PartitionTimer:
    return PartitionTimer(0, horizon_ms=3_600_000, tick_ms=10, start_ms=now, max_batch=max_batch)


def _job(job_id: str, now: int = T0, **spec: Any) -> dict[str, Any]:
    return validate_job({"jobId": job_id, "type": "noop", "jitter": "0s", **spec}, now)


def _run(timer: PartitionTimer, start: int, end: int, step: int = 100) -> list[dict[str, Any]]:
    requests = []
    for now in range(start, end + 1, step):
        requests.extend(timer.tick(now).requests)
    return requests


def test_each_slot_fires_once_never_early_in_order() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/5 * * * * *"))
    timer.finish_restore(T0)
    requests = _run(timer, T0, T0 + 60_000)
    slots = [r["scheduled_time"] for r in requests]
    assert slots == list(range(T0 + 5_000, T0 + 60_001, 5_000))
    assert all(r["requested_at"] >= r["fire_time"] for r in requests)
    assert len({r["execution_id"] for r in requests}) == len(requests)


def test_restore_resumes_after_the_last_emitted_slot_without_repeating_it() -> None:
    timer = _timer(T0 + 30_000)
    timer.load_definition("a", _job("a", cron="*/5 * * * * *"))
    timer.load_state("a", {"last_scheduled_time": T0 + 20_000, "last_fire_time": T0 + 20_000})
    emission = timer.finish_restore(T0 + 30_000)
    # 25 s and 30 s are within the grace period: they fire from the wheel, not as misfires.
    assert not emission.requests and not emission.events
    slots = [r["scheduled_time"] for r in _run(timer, T0 + 30_000, T0 + 40_000)]
    assert slots == [T0 + 25_000, T0 + 30_000, T0 + 35_000, T0 + 40_000]


def test_outage_under_skip_records_every_missed_slot_as_skipped() -> None:
    now = T0 + MISFIRE_GRACE_MS + 600_000
    timer = _timer(now)
    timer.load_definition("a", _job("a", cron="* * * * *", misfirePolicy="skip"))
    timer.load_state("a", {"last_scheduled_time": T0, "last_fire_time": T0})
    emission = timer.finish_restore(now)
    assert emission.requests == []
    skipped = sorted(e["scheduled_time"] for e in emission.events)
    assert skipped == list(range(T0 + 60_000, T0 + 600_001, 60_000))
    assert all(e["event_type"] == "skipped" for e in emission.events)


def test_outage_under_catch_up_fires_missed_slots_in_order_marked_late() -> None:
    now = T0 + MISFIRE_GRACE_MS + 300_000
    timer = _timer(now)
    timer.load_definition("a", _job("a", cron="* * * * *"))
    timer.load_state("a", {"last_scheduled_time": T0, "last_fire_time": T0})
    emission = timer.finish_restore(now)
    slots = [r["scheduled_time"] for r in emission.requests]
    assert slots == list(range(T0 + 60_000, T0 + 300_001, 60_000))
    assert all(r["late"] and r["trigger"] == "catch_up" for r in emission.requests)


def test_pause_fires_nothing_and_resume_does_not_owe_the_paused_slots() -> None:
    timer = _timer()
    definition = _job("a", cron="*/5 * * * * *")
    timer.load_definition("a", definition)
    timer.finish_restore(T0)
    paused = {**definition, "enabled": False, "version": 2, "updatedAt": T0 + 6_000}
    timer.apply_definition("a", paused, T0 + 6_000)
    assert _run(timer, T0 + 6_000, T0 + 120_000) == []
    resumed = {**definition, "enabled": True, "version": 3, "updatedAt": T0 + 120_000}
    emission = timer.apply_definition("a", resumed, T0 + 120_000)
    assert emission.requests == [] and emission.events == []
    slots = [r["scheduled_time"] for r in _run(timer, T0 + 120_000, T0 + 130_000)]
    assert slots == [T0 + 125_000, T0 + 130_000]


def test_edit_applies_from_the_next_slot_under_the_new_version() -> None:
    timer = _timer()
    definition = _job("a", cron="*/5 * * * * *")
    timer.load_definition("a", definition)
    timer.finish_restore(T0)
    first = _run(timer, T0, T0 + 10_000)
    edited = {**definition, "cron": "*/2 * * * * *", "version": 2, "updatedAt": T0 + 10_000}
    timer.apply_definition("a", edited, T0 + 10_000)
    after = _run(timer, T0 + 10_100, T0 + 16_000)
    assert [r["job_version"] for r in first] == [1, 1]
    assert [r["scheduled_time"] for r in after] == [T0 + 12_000, T0 + 14_000, T0 + 16_000]
    assert {r["job_version"] for r in after} == {2}


def test_delete_stops_firing_and_tombstones_the_state() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/5 * * * * *"))
    timer.finish_restore(T0)
    emission = timer.apply_definition("a", None, T0 + 1_000)
    assert emission.states == {"a": None}
    assert _run(timer, T0 + 1_000, T0 + 30_000) == []


def test_a_burst_is_served_round_robin_across_tenants_in_bounded_batches() -> None:
    timer = _timer(max_batch=100)
    for i in range(300):
        timer.load_definition(
            f"big-{i}", _job(f"big-{i}", runAt="2027-01-15T08:01:00Z", tenantId="big")
        )
    timer.load_definition(
        "small-1", _job("small-1", runAt="2027-01-15T08:01:00Z", tenantId="small")
    )
    timer.finish_restore(T0)
    first = timer.tick(T0 + 60_000).requests
    assert len(first) == 100
    assert "small-1" in [r["job_id"] for r in first[:2]]
    rest = (
        timer.tick(T0 + 60_050).requests
        + timer.tick(T0 + 60_100).requests
        + timer.tick(T0 + 60_150).requests
    )
    assert len(first) + len(rest) == 301


def test_far_future_jobs_wait_outside_the_wheel_until_the_horizon_reaches_them() -> None:
    timer = _timer()
    timer.load_definition("soon", _job("soon", runAt="2027-01-15T08:10:00Z"))
    timer.load_definition("later", _job("later", runAt="2027-01-16T08:00:00Z"))
    timer.finish_restore(T0)
    assert len(timer.wheel) == 1
    timer.tick(T0 + 86_400_000 - 3_600_000)
    assert len(timer.wheel) == 1  # "soon" fired; "later" entered the horizon
    assert timer.jobs["later"].handle is not None
    # ("soon", never leased, is re-issued past its dispatch deadline: first attempts only.)
    fired = [r["job_id"] for r in timer.tick(T0 + 86_400_000).requests if r["attempt"] == 1]
    assert fired == ["later"]


def test_trigger_and_backfill_commands() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="0 * * * *"))
    timer.finish_restore(T0)
    trigger = timer.command({"job_id": "a", "kind": "trigger", "requested_at": T0 + 5}, T0 + 10)
    assert [r["trigger"] for r in trigger.requests] == ["manual"]
    backfill = timer.command(
        {"job_id": "a", "kind": "backfill", "requested_at": T0, "range_start": T0 - 3 * 3_600_000,
         "range_end": T0},
        T0 + 10,
    )  # fmt: skip
    assert [r["scheduled_time"] for r in backfill.requests] == [T0 - 7_200_000, T0 - 3_600_000, T0]
    assert [r["period_start"] for r in backfill.requests] == [
        T0 - 10_800_000,
        T0 - 7_200_000,
        T0 - 3_600_000,
    ]


def test_a_resume_is_persisted_so_a_new_owner_does_not_owe_the_paused_slots() -> None:
    timer = _timer()
    definition = _job("a", cron="* * * * *")
    timer.load_definition("a", definition)
    timer.finish_restore(T0)
    timer.apply_definition(
        "a", {**definition, "enabled": False, "version": 2, "updatedAt": T0 + 90_000}, T0 + 90_000
    )
    resume_at = T0 + 9 * 3_600_000
    resumed = {**definition, "enabled": True, "version": 3, "updatedAt": resume_at}
    state = timer.apply_definition("a", resumed, resume_at).states["a"]
    heir = _timer(resume_at + 120_000)
    heir.load_definition("a", resumed)
    heir.load_state("a", state)
    emission = heir.finish_restore(resume_at + 120_000)
    # Only slots after the resume are owed; none of the nine paused hours is fired or skipped.
    assert emission.events == []
    assert all(r["scheduled_time"] > resume_at for r in emission.requests)


def test_a_state_left_by_a_deleted_predecessor_is_ignored() -> None:
    now = T0 + 86_400_000
    timer = _timer(now)
    timer.load_definition("a", _job("a", now=now - 10_000, runAt="2027-01-16T07:59:55Z"))
    timer.load_state(
        "a", {"job_version": 7, "last_scheduled_time": T0 + 86_400_000, "updated_at": T0}
    )
    emission = timer.finish_restore(now)
    assert [r["job_id"] for r in emission.requests] + [
        r["job_id"] for r in timer.tick(now).requests
    ] == ["a"]


def test_a_held_queue_one_slot_survives_a_change_of_owner() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/5 * * * * *", overlapPolicy="queue_one"))
    timer.finish_restore(T0)
    [running] = timer.tick(T0 + 5_000).requests
    held = timer.tick(T0 + 10_000)
    assert held.requests == []
    heir = _timer(T0 + 10_050)
    heir.load_definition("a", _job("a", cron="*/5 * * * * *", overlapPolicy="queue_one"))
    heir.load_state("a", held.states["a"])
    heir.finish_restore(T0 + 10_050)
    from tests.unit.core.timer.test_timer_executions import _worker_event

    released = heir.on_execution_event(
        _worker_event(running, "succeeded", T0 + 11_000), T0 + 11_000
    )
    assert [r["scheduled_time"] for r in released.requests] == [T0 + 10_000]


def test_catch_up_is_committed_in_bounded_chunks_that_never_split_a_job() -> None:
    now = T0 + 3 * 3_600_000
    timer = _timer(now)
    for i in range(30):
        timer.load_definition(f"j{i}", _job(f"j{i}", cron="*/5 * * * *"))
        timer.load_state(f"j{i}", {"last_scheduled_time": T0, "updated_at": T0, "job_version": 1})
    emission = timer.finish_restore(now)
    chunks = emission.chunks(100)
    assert len(chunks) > 1
    assert sum(len(c.requests) for c in chunks) == len(emission.requests)
    for chunk in chunks:
        jobs = {r["job_id"] for r in chunk.requests}
        assert jobs == set(chunk.states)  # each job's requests travel with its state
        assert len(chunk.requests) + len(chunk.events) <= 100 or len(jobs) == 1


def test_definitions_that_would_break_a_decision_are_refused() -> None:
    import pytest

    from tickwheel.core.timer.jobs import entry_from_definition
    from tickwheel.errors import InvalidInput

    good = _job("a", cron="* * * * *")
    for broken in (
        {**good, "maxAttempts": 0},
        {**good, "maxCatchUp": -1},
        {**good, "cron": None},
        {**good, "runAt": T0},
        {**good, "cron": "61 * * * *"},
        {**good, "timezone": "Mars/Olympus"},
    ):
        with pytest.raises(InvalidInput):
            entry_from_definition(broken)


def test_a_catch_up_honours_the_overlap_policy_between_the_slots_it_fires() -> None:
    now = T0 + MISFIRE_GRACE_MS + 300_000  # five missed minutes, all due at once
    fired: dict[str, list[int]] = {}
    for policy in ("allow", "skip", "queue_one"):
        timer = _timer(now)
        timer.load_definition("a", _job("a", cron="* * * * *", overlapPolicy=policy))
        timer.load_state("a", {"last_scheduled_time": T0, "last_fire_time": T0})
        emission = timer.finish_restore(now)
        fired[policy] = [r["scheduled_time"] for r in emission.requests]
        skipped = [e["scheduled_time"] for e in emission.events if e["event_type"] == "skipped"]
        assert sorted(fired[policy] + skipped + list(timer.held.values())) == [
            T0 + k * 60_000 for k in range(1, 6)
        ], "every missed slot is fired, held or recorded as skipped"
        state = emission.states["a"]
        assert state is not None and state["last_scheduled_time"] == T0 + 300_000
        if policy == "queue_one":
            assert [p["fire_at"] for p in state["pending"] if p["kind"] == "manual"] == [
                T0 + 120_000
            ], "the held slot is persisted"
    assert fired == {
        "allow": [T0 + k * 60_000 for k in range(1, 6)],
        "skip": [T0 + 60_000],
        "queue_one": [T0 + 60_000],
    }
