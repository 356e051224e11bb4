"""A turn later than a job's period: the slots that came due meanwhile fire in that turn's
tick, in order, not one a turn (decision 0177). Found in the steady pipeline: turns of 1.2 s
fired each every-second job once a turn, 8,500 of 10,000 a second."""

from __future__ import annotations

from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # a whole minute


def _timer(max_batch: int = 10_000, jobs: int = 1) -> PartitionTimer:
    timer = PartitionTimer(0, horizon_ms=3_600_000, tick_ms=50, start_ms=T0, max_batch=max_batch)
    for i in range(jobs):
        spec = {"jobId": f"j{i}", "type": "noop", "jitter": "0s", "cron": "* * * * * *"}
        timer.load_definition(f"j{i}", validate_job(spec, T0 - 1))
    timer.finish_restore(T0)
    return timer


def test_a_tick_late_by_several_periods_fires_every_slot_that_came_due() -> None:
    timer = _timer()
    assert [r["scheduled_time"] for r in timer.tick(T0).requests] == [T0]
    late = timer.tick(T0 + 3_200)  # a turn of 3.2 s
    # Before: only T0 + 1 s, and T0 + 2 s and + 3 s in the next two turns.
    assert [r["scheduled_time"] for r in late.requests] == [T0 + 1_000, T0 + 2_000, T0 + 3_000]
    assert {r["requested_at"] for r in late.requests} == {T0 + 3_200}
    assert timer.tick(T0 + 3_250).requests == []  # nothing fires twice
    assert [r["scheduled_time"] for r in timer.tick(T0 + 4_000).requests] == [T0 + 4_000]


def test_the_late_passes_stay_within_the_batch_and_lose_nothing() -> None:
    timer = _timer(max_batch=5, jobs=2)
    assert len(timer.tick(T0).requests) == 2
    late = timer.tick(T0 + 10_000)
    assert len(late.requests) == 5  # the batch; what is left waits for the next tick
    writes = [late] + [timer.tick(T0 + 10_000 + 50 * k) for k in range(1, 6)]
    fired = [(r["job_id"], r["scheduled_time"]) for w in writes for r in w.requests]
    skipped = [(e["job_id"], e["scheduled_time"]) for w in writes for e in w.events]
    assert all(len(w.requests) <= 5 for w in writes)
    assert len(set(fired)) == len(fired)  # nothing fires twice
    owed = {(f"j{i}", T0 + s * 1_000) for i in range(2) for s in range(1, 11)}
    # Each slot fired or recorded (a slot left waiting behind a full batch is coalesced with
    # the job's next one, as the ready queue's bound says), none lost.
    assert set(fired) | set(skipped) == owed and not set(fired) & set(skipped)
