"""A turn later than a job's period: the tick fires the job's next owed slot, and the ticks
after it the others, one each, in order; none lost, none twice (decision 0177: firing them all
in the late tick was measured, and lost slots to the batch and the tenant cap)."""

from __future__ import annotations

from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # a whole minute


def _timer() -> PartitionTimer:
    timer = PartitionTimer(0, horizon_ms=3_600_000, tick_ms=50, start_ms=T0, max_batch=10_000)
    spec = {"jobId": "j", "type": "noop", "jitter": "0s", "cron": "* * * * * *"}
    timer.load_definition("j", validate_job(spec, T0 - 1))
    timer.finish_restore(T0)
    return timer


def test_a_late_tick_fires_one_slot_and_the_next_ticks_the_rest_in_order() -> None:
    timer = _timer()
    assert [r["scheduled_time"] for r in timer.tick(T0).requests] == [T0]
    fired = [
        [r["scheduled_time"] for r in timer.tick(now).requests]
        for now in (T0 + 3_200, T0 + 3_250, T0 + 3_300, T0 + 3_350, T0 + 4_000)
    ]
    assert fired == [[T0 + 1_000], [T0 + 2_000], [T0 + 3_000], [], [T0 + 4_000]]
    assert timer.tick(T0 + 4_050).events == []  # nothing coalesced away within the grace
