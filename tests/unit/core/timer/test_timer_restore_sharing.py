"""What a restore shares between jobs (to keep a million-job restore cheap) never changes what
each job gets: a catch-up walk shared by jobs on one schedule and last slot, and a definition's
shape checked once, with every field that differs between records still checked."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.timer.jobs import shared_walk
from tickwheel.core.timer.partition import PartitionScheduler
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import validate_job

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z, a whole minute
GRACE_MS = 60_000


def _scheduler(now: int) -> PartitionScheduler:
    return PartitionScheduler(0, horizon_ms=3_600_000, tick_ms=10, start_ms=now, max_batch=10_000)


def _job(job_id: str, **spec: Any) -> dict[str, Any]:
    return validate_job({"jobId": job_id, "type": "noop", "jitter": "0s", **spec}, T0)


def test_jobs_sharing_a_catch_up_walk_each_fire_their_own_missed_slots() -> None:
    now = T0 + GRACE_MS + 300_000
    scheduler = _scheduler(now)
    for job_id in ("a", "b", "c"):
        scheduler.load_definition(job_id, _job(job_id, cron="* * * * *"))
        scheduler.load_state(job_id, {"last_scheduled_time": T0, "last_fire_time": T0})
    # One job of the same schedule whose last slot differs walks on its own.
    scheduler.load_definition("late", _job("late", cron="* * * * *"))
    scheduler.load_state("late", {"last_scheduled_time": T0 + 180_000, "last_fire_time": T0})
    hits_before = shared_walk.cache_info().hits
    writes = scheduler.finish_restore(now)
    missed = list(range(T0 + 60_000, T0 + 300_001, 60_000))
    by_job: dict[str, list[int]] = {}
    for request in writes.requests:
        by_job.setdefault(request["job_id"], []).append(request["scheduled_time"])
    assert by_job == {"a": missed, "b": missed, "c": missed, "late": missed[3:]}
    # Each job's request is its own execution, though the walk was one.
    assert len({r["execution_id"] for r in writes.requests}) == len(writes.requests)
    assert shared_walk.cache_info().hits - hits_before >= 2
    for job_id in ("a", "b", "c", "late"):
        assert scheduler.jobs[job_id].last_scheduled_ms == T0 + 300_000


def test_a_known_shape_does_not_pass_a_record_whose_lists_or_labels_differ() -> None:
    good = _job("shape-lists", cron="0 9 * * *", exclude=["2027-12-25"], labels={"team": "ops"})
    check_definition_record(good, "shape-lists")  # this shape is now known valid
    refused = {
        "exclude": {**good, "exclude": ["not-a-date"]},
        "labels": {**good, "labels": {"team": 5}},
        "schedules": {**good, "schedules": [{"cron": "not a cron"}]},
    }
    for field, record in refused.items():
        # InvalidInput, or the schedule's own InvalidSchedule: one line naming the field.
        with pytest.raises(ValueError) as error:
            check_definition_record(record, "shape-lists")
        assert str(error.value).startswith(field), (field, str(error.value))


def test_a_container_where_the_schema_has_a_scalar_is_checked_not_cached() -> None:
    good = _job("shape-scalar", cron="0 9 * * *")
    check_definition_record(good, "shape-scalar")
    with pytest.raises(InvalidInput) as error:
        check_definition_record({**good, "cron": ["0 9 * * *"]}, "shape-scalar")
    assert error.value.field == "cron"
