"""A resume that only a restore reads: the job was paused while served, then resumed while no
instance served its partition (an owner restarting, a rebalance), so the first to see the
resume is the restore, reading the definitions in order after the job's state. Slots that fell
while the job was paused are not owed (decision 0004), whichever path reads the resume: the
restore walks on from the resume instant as the live path does (decision 0159).

Found under load by `tests/chaos/test_timer_lifecycle.py`: a restarted timer slow to start
restored after the test's resume, and fired every paused slot of the last minute (late, from
the wheel); past the misfire grace a `catch_up` job would have fired all of them as catch-ups.
"""

from __future__ import annotations

from typing import Any

from tickwheel.core.timer.partition import MISFIRE_GRACE_MS
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # a whole minute
EVERY_2S = "*/2 * * * * *"


def _timer(now: int) -> PartitionTimer:
    return PartitionTimer(0, horizon_ms=3_600_000, tick_ms=50, start_ms=now, max_batch=10_000)


def _job(version: int, updated_at: int, enabled: bool = True, **spec: Any) -> dict[str, Any]:
    record = validate_job(
        {"jobId": "a", "type": "noop", "jitter": "0s", "cron": EVERY_2S, **spec}, T0
    )
    return {**record, "version": version, "updatedAt": updated_at, "enabled": enabled}


def _fired(timer: PartitionTimer, start: int, end: int) -> list[int]:
    return [r["scheduled_time"] for now in range(start, end + 1, 50)
            for r in timer.tick(now).requests]  # fmt: skip


def _restored(
    now: int, last_slot: int, records: list[dict[str, Any] | None], state_version: int = 2
) -> tuple[PartitionTimer, Any]:
    """A partition restored at `now`: the job's state as its pause wrote it (its last slot
    `last_slot`), then its definitions in log order."""
    timer = _timer(now)
    timer.load_state(
        "a",
        {"job_id": "a", "job_version": state_version, "last_scheduled_time": last_slot,
         "last_fire_time": last_slot, "updated_at": last_slot + 500, "pending": [], "seq": 7},
    )  # fmt: skip
    for record in records:
        timer.load_definition("a", record)
    return timer, timer.finish_restore(now)


def test_a_resume_read_by_the_restore_owes_no_slot_of_the_pause_within_the_grace() -> None:
    paused_at, resumed_at, now = T0 + 1_000, T0 + 17_500, T0 + 21_000
    timer, emission = _restored(
        now, T0, [_job(1, T0 - 60_000), _job(2, paused_at, False), _job(3, resumed_at)]
    )
    fired = [r["scheduled_time"] for r in emission.requests] + _fired(timer, now, T0 + 24_000)
    # Before the fix: every slot from T0 + 2 s on, fired late from the wheel.
    assert fired == [T0 + 18_000, T0 + 20_000, T0 + 22_000, T0 + 24_000]


def test_a_resume_read_by_the_restore_owes_no_slot_of_the_pause_past_the_grace() -> None:
    paused_at = T0 + 1_000
    resumed_at = T0 + MISFIRE_GRACE_MS + 300_000
    now = resumed_at + 2_000
    records = [_job(1, T0 - 60_000), _job(2, paused_at, False), _job(3, resumed_at)]
    for policy in ("catch_up", "coalesce", "skip"):
        timer, emission = _restored(now, T0, [{**r, "misfirePolicy": policy} for r in records])
        # Before the fix: catch_up fired 150 paused slots, coalesce one, skip recorded them.
        assert emission.requests == [] and emission.events == [], policy
        assert _fired(timer, now, now + 2_000) == [resumed_at + 2_000, now + 2_000], policy


def test_the_restore_writes_the_resumed_watermark_so_a_later_restore_keeps_it() -> None:
    """Once compaction has dropped the paused version, a later restore sees the resumed
    definition alone: the state the first restore wrote must carry the resume instant."""
    paused_at, resumed_at, now = T0 + 1_000, T0 + 17_500, T0 + 21_000
    _first, emission = _restored(
        now, T0, [_job(1, T0 - 60_000), _job(2, paused_at, False), _job(3, resumed_at)]
    )
    state = emission.states["a"]
    assert state is not None and state["last_scheduled_time"] >= resumed_at
    # Nothing fired in between: the slots after the resume are still owed, and only those.
    later, again = _restored(now + 1_000, state["last_scheduled_time"], [_job(3, resumed_at)], 3)
    fired = [r["scheduled_time"] for r in again.requests] + _fired(later, now + 1_000, T0 + 24_000)
    assert fired == [T0 + 18_000, T0 + 20_000, T0 + 22_000, T0 + 24_000]


def test_an_edit_read_by_the_restore_still_owes_the_outage_by_its_misfire_policy() -> None:
    """Only a pause makes slots not owed: an edit a restore reads walks on from the last slot
    the state records, and the outage's slots go through the misfire policy as before."""
    now = T0 + MISFIRE_GRACE_MS + 10_000
    edited = _job(2, T0 + 5_000, payload={"n": 2}, misfirePolicy="catch_up")
    _timer, emission = _restored(now, T0, [_job(1, T0 - 60_000), edited], state_version=1)
    caught_up = [r["scheduled_time"] for r in emission.requests]
    assert caught_up == list(range(T0 + 2_000, now - MISFIRE_GRACE_MS + 1, 2_000))


def test_a_job_deleted_and_created_again_while_paused_is_a_new_job() -> None:
    """A tombstone between the pause and the next record ends the old job: the new one's
    first slot is its first after its creation, with no resume of the old one carried over."""
    created, now = T0 + 9_000, T0 + 12_000
    recreated = {**_job(1, created), "createdAt": created}
    timer, emission = _restored(now, T0, [_job(1, T0 - 60_000), _job(2, T0 + 1_000, False),
                                          None, recreated])  # fmt: skip
    fired = [r["scheduled_time"] for r in emission.requests] + _fired(timer, now, T0 + 14_000)
    assert fired == [T0 + 10_000, T0 + 12_000, T0 + 14_000]


def test_the_slots_between_two_pauses_a_restore_reads_are_owed_by_the_misfire_policy() -> None:
    """Paused (read live: the state is the pause's), then resumed, paused and resumed again
    while nobody served the partition: the job was enabled between the first resume and the
    second pause, and those slots were missed as in an outage (decision 0176). The slots of
    either pause are still not owed."""
    resumed_1, paused_2, resumed_2, now = T0 + 10_000, T0 + 20_000, T0 + 30_000, T0 + 31_000
    records = [_job(1, T0 - 60_000), _job(2, T0 + 1_000, False), _job(3, resumed_1),
               _job(4, paused_2, False), _job(5, resumed_2)]  # fmt: skip
    span = [T0 + 12_000, T0 + 14_000, T0 + 16_000, T0 + 18_000]  # T0 + 20 s is the pause's
    timer, emission = _restored(now, T0, [{**r, "misfirePolicy": "catch_up"} for r in records])
    # Before the fix: nothing of the span, neither fired nor recorded.
    assert [r["scheduled_time"] for r in emission.requests] == span
    assert {r["trigger"] for r in emission.requests} == {"catch_up"}
    assert _fired(timer, now, T0 + 34_000) == [T0 + 32_000, T0 + 34_000]
    for policy, fired, recorded in (("coalesce", span[-1:], span[:-1]), ("skip", [], span)):
        timer, emission = _restored(now, T0, [{**r, "misfirePolicy": policy} for r in records])
        assert [r["scheduled_time"] for r in emission.requests] == fired, policy
        assert [e["scheduled_time"] for e in emission.events] == recorded, policy
        assert _fired(timer, now, T0 + 34_000) == [T0 + 32_000, T0 + 34_000], policy


def test_the_slots_before_a_pause_the_state_does_not_cover_are_owed() -> None:
    """The owner died before it read the pause (its state is the version before): the slots
    between the state's last one and the pause fell while the job was enabled and unserved."""
    paused_at, resumed_at, now = T0 + 9_000, T0 + 20_000, T0 + 21_000
    records = [_job(1, T0 - 60_000, misfirePolicy="catch_up"),
               _job(2, paused_at, False, misfirePolicy="catch_up"),
               _job(3, resumed_at, misfirePolicy="catch_up")]  # fmt: skip
    timer, emission = _restored(now, T0, records, state_version=1)
    assert [r["scheduled_time"] for r in emission.requests] == [
        T0 + 2_000,
        T0 + 4_000,
        T0 + 6_000,
        T0 + 8_000,
    ]
    assert _fired(timer, now, T0 + 24_000) == [T0 + 22_000, T0 + 24_000]
    # The state the pause wrote covers the span: nothing of it is owed again.
    timer, emission = _restored(now, T0 + 8_000, records, state_version=2)
    assert emission.requests == [] and emission.events == []


def _paused_state(paused_at: int, policy: str) -> dict[str, Any]:
    """The state a serving owner writes when it reads the pause (its last slot T0 + 4 s)."""
    live = _timer(T0)
    live.load_definition("a", {**_job(1, T0 - 60_000), "misfirePolicy": policy})
    live.finish_restore(T0)
    assert _fired(live, T0, T0 + 4_000) == [T0 + 2_000, T0 + 4_000]
    writes = live.apply_definition(
        "a", {**_job(2, paused_at, False), "misfirePolicy": policy}, paused_at
    )
    state = writes.states["a"]
    assert state is not None and state["job_version"] == 2
    return {**state, "seq": 7}


def test_a_resume_whose_pause_was_compacted_away_owes_no_slot_of_the_pause() -> None:
    """The owner read the pause and wrote the job's state; the partition went unowned, the job
    was resumed, and compaction dropped the paused version: the restore reads the resumed
    definition alone. The state says the job was paused (decision 0176): the slots since it
    are the pause's, not an outage's."""
    paused_at = T0 + 5_000
    for resumed_at, now in (
        (T0 + 17_500, T0 + 21_000),
        (T0 + MISFIRE_GRACE_MS + 300_000, T0 + MISFIRE_GRACE_MS + 302_000),
    ):
        for policy in ("catch_up", "coalesce", "skip"):
            timer = _timer(now)
            timer.load_state("a", _paused_state(paused_at, policy))
            timer.load_definition("a", {**_job(3, resumed_at), "misfirePolicy": policy})
            emission = timer.finish_restore(now)
            # Before the fix: the pause's slots, fired late, caught up, coalesced or skipped.
            assert emission.requests == [] and emission.events == [], (policy, resumed_at)
            first = resumed_at + 2_000 - resumed_at % 2_000  # the first slot after the resume
            owed = list(range(first, now + 2_001, 2_000))
            assert _fired(timer, now, now + 2_000) == owed, (policy, resumed_at)
