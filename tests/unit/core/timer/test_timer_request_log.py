"""A job that fires leaves its state for later; its request stands for it (decision 0008).

The request log's bookkeeping, and the scheduler's side of it: what a fire defers, what a
quiet tick writes, and what an heir rebuilds from an old state plus the requests after it.
"""

from __future__ import annotations

import random
from typing import Any

from tickwheel.core.timer.request_log import (
    MAX_DEFERRED_STATES,
    MAX_UNSAVED_AGE_MS,
    RequestLog,
    bursting,
)
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z
TOPIC = "executions.normal"


def _timer(now: int = T0) -> PartitionTimer:
    return PartitionTimer(0, 3_600_000, 10, now, 10_000, rng=random.Random(1))


def _job(job_id: str, **spec: Any) -> dict[str, Any]:
    return validate_job({"jobId": job_id, "type": "noop", "jitter": "0s", **spec}, T0)


def _leased(request: dict[str, Any], at: int) -> dict[str, Any]:
    return {
        "event_id": f"w:{request['execution_id']}:{at}", "event_time": at, "event_type": "leased",
        "job_id": request["job_id"], "job_type": "noop", "tenant_id": request["tenant_id"],
        "execution_id": request["execution_id"], "attempt": request["attempt"],
        "scheduled_time": request["scheduled_time"], "fire_time": request["fire_time"],
        "worker_id": "w-1", "lease_deadline": at + 30_000, "error": None, "error_kind": None,
        "reason": None, "details": None,
    }  # fmt: skip


# -- the scheduler ---------------------------------------------------------------------------
def test_a_plain_fire_leaves_the_state_for_later_and_a_snapshot_writes_it() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/10 * * * * *"))
    timer.finish_restore(T0)
    fired = timer.tick(T0 + 10_000)
    [request] = fired.requests
    assert fired.unsaved == ["a"] and "a" not in fired.states
    state = timer.snapshot(["a"], T0 + 10_050).states["a"]
    assert state is not None and state["last_scheduled_time"] == T0 + 10_000
    assert [p["execution_id"] for p in state["pending"]] == [request["execution_id"]]


def test_a_state_built_before_a_fire_in_the_same_transaction_is_rebuilt() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/10 * * * * *"))
    timer.finish_restore(T0)
    first = timer.tick(T0 + 10_000).requests[0]
    # A worker's event read before the next tick: its state knows nothing of the next fire.
    emission = timer.on_execution_event(_leased(first, T0 + 10_100), T0 + 10_100)
    emission.extend(timer.tick(T0 + 20_000))
    assert emission.unsaved == ["a"]
    timer.refresh_fired_states(emission, T0 + 20_000)
    state = emission.states["a"]
    assert emission.unsaved == [] and state is not None
    assert state["last_scheduled_time"] == T0 + 20_000, "the state covers the fire it rides with"
    assert len(state["pending"]) == 2


def test_an_heir_replays_only_requests_newer_than_the_state_and_fires_nothing_twice() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/10 * * * * *"))
    timer.finish_restore(T0)
    first = timer.tick(T0 + 10_000).requests[0]
    saved = timer.snapshot(["a"], T0 + 10_050).states["a"]
    assert saved is not None
    saved = {**saved, "seq": 7}  # written by transaction 7
    second = timer.tick(T0 + 20_000).requests[0]  # transaction 8: no state written

    heir = _timer(T0 + 20_100)
    heir.load_state("a", saved)
    heir.load_definition("a", _job("a", cron="*/10 * * * * *"))
    heir.load_request(first, 6)  # older than the state: already in it
    heir.load_request(second, 8)
    heir.finish_restore(T0 + 20_100)
    assert set(heir.executions.in_flight) == {first["execution_id"], second["execution_id"]}
    later = [r["scheduled_time"] for now in range(T0 + 20_100, T0 + 40_001, 100)
             for r in heir.tick(now).requests]  # fmt: skip
    assert later == [T0 + 30_000, T0 + 40_000], "the replayed slot is not fired again"
    # The worker that leased the replayed request is heard, not fenced.
    heard = heir.on_execution_event(_leased(second, T0 + 40_100), T0 + 40_100)
    assert not heard.events and heard.states["a"] is not None


def _one_off_fired() -> dict[str, Any]:
    """The request of a one-off job "a" fired at T0 + 10 s, its state left for later."""
    timer = _timer()
    timer.load_definition("a", _job("a", runAt="2027-01-15T08:00:10Z"))
    timer.finish_restore(T0)
    fired = timer.tick(T0 + 10_000)
    assert fired.unsaved == ["a"]
    return fired.requests[0]


def test_a_finished_execution_is_not_resurrected_by_its_old_request() -> None:
    request = _one_off_fired()
    heir = _timer(T0 + 20_000)
    heir.load_definition("a", _job("a", runAt="2027-01-15T08:00:10Z"))
    # Its state was written after the request (seq 9 > 8): the execution finished meanwhile.
    heir.load_state("a", {"job_id": "a", "job_version": 1, "last_scheduled_time": T0 + 10_000,
                          "last_fire_time": T0 + 10_000, "updated_at": T0 + 15_000,
                          "pending": [], "seq": 9})  # fmt: skip
    heir.load_request(request, 8)
    heir.finish_restore(T0 + 20_000)
    assert heir.executions.in_flight == {}


def test_a_request_of_a_job_deleted_with_nothing_in_flight_is_ignored() -> None:
    request = _one_off_fired()
    heir = _timer(T0 + 20_000)
    heir.load_state("a", None)  # its state's tombstone: it finished, then it was deleted
    heir.load_request(request, 3)
    heir.finish_restore(T0 + 20_000)
    assert heir.executions.in_flight == {} and heir.jobs == {}


def test_a_job_deleted_before_its_first_state_keeps_its_execution_tracked() -> None:
    request = _one_off_fired()
    # No state was ever written, and the job was deleted while nobody owned the partition.
    heir = _timer(T0 + 20_000)
    assert heir.load_request(request, 3)
    heir.finish_restore(T0 + 20_000)
    assert list(heir.executions.in_flight) == [request["execution_id"]]
    orphan = heir.snapshot(["a"], T0 + 20_000).states["a"]
    assert orphan is not None and len(orphan["pending"]) == 1


def test_a_recreated_jobs_replayed_fire_is_not_mistaken_for_its_predecessors() -> None:
    # The old incarnation (version 3) left a state; the job was deleted and re-created
    # (version 1, created later) while nobody owned the partition, then fired unsaved.
    recreated_at = T0 + 5_000
    old_state = {"job_id": "a", "job_version": 3, "last_scheduled_time": T0 - 60_000,
                 "last_fire_time": T0 - 60_000, "updated_at": T0 - 60_000, "pending": [],
                 "seq": 5}  # fmt: skip
    definition = validate_job(
        {"jobId": "a", "type": "noop", "jitter": "0s", "cron": "*/10 * * * * *"}, recreated_at
    )
    owner = _timer(recreated_at)
    owner.load_state("a", dict(old_state))
    owner.load_definition("a", definition)
    owner.finish_restore(recreated_at)
    fired = owner.tick(T0 + 10_000)
    assert fired.unsaved == ["a"]
    [request] = fired.requests
    # The heir replays it: the slot is this job's, not refired.
    heir = _timer(T0 + 12_000)
    heir.load_state("a", dict(old_state))
    heir.load_definition("a", definition)
    assert heir.load_request(request, 20)
    heir.finish_restore(T0 + 12_000)
    later = [r["scheduled_time"] for now in range(T0 + 12_000, T0 + 20_001, 100)
             for r in heir.tick(now).requests]  # fmt: skip
    assert later == [T0 + 20_000]
    # And a request of the old incarnation (a slot before the job existed) is not applied.
    stale = {**request, "scheduled_time": T0, "execution_id": "old"}
    assert not heir.load_request(stale, 21)


# -- the bookkeeping -------------------------------------------------------------------------
def test_checkpoint_offsets_start_at_the_oldest_unsaved_jobs_transaction() -> None:
    log = RequestLog(seq=10, end_offsets={TOPIC: 100})
    assert log.checkpoint_offsets([], []) == {}, "nothing unsaved: nothing to replay"
    # The transaction about to commit fires a and b: its own offsets are unknown yet, so the
    # restore's mark (the topic's end then) stands in.
    assert log.checkpoint_offsets([], ["a", "b"]) == {TOPIC: 100}
    log.committed(11, ["a", "b"], [], {TOPIC: 100}, now_ms=T0)
    log.committed(12, ["c"], [], {TOPIC: 103}, now_ms=T0 + 50)
    assert log.checkpoint_offsets([], []) == {TOPIC: 100}
    # Once a and b are saved, c (transaction 12) is the oldest: its requests start at 103.
    assert log.checkpoint_offsets(["a", "b"], []) == {TOPIC: 103}
    log.committed(13, [], ["a", "b"], {}, now_ms=T0 + 100)
    assert list(log.unsaved) == ["c"] and log.oldest_age_ms(T0 + 100) == 50
    assert log.checkpoint_offsets(["c"], []) == {}
    # c saved while d fires: d's offset is not known before the commit; the last mark stands in.
    assert log.checkpoint_offsets(["c"], ["d"]) == {TOPIC: 103}


def test_a_job_firing_again_keeps_its_oldest_unsaved_request() -> None:
    log = RequestLog(seq=0, end_offsets={TOPIC: 0})
    log.committed(1, ["a"], [], {TOPIC: 0}, now_ms=T0)
    log.committed(2, ["b"], [], {TOPIC: 5}, now_ms=T0 + 10)
    log.committed(3, ["a"], [], {TOPIC: 9}, now_ms=T0 + 20)
    assert log.oldest(10) == ["a", "b"] and log.unsaved["a"][0] == 1
    assert log.checkpoint_offsets(["b"], []) == {TOPIC: 0}, "a's first unsaved request is at 0"
    log.committed(4, [], ["a"], {}, now_ms=T0 + 30)
    assert log.checkpoint_offsets([], []) == {TOPIC: 5}


def test_jobs_rebuilt_at_a_restore_stay_unsaved_until_their_states_are_written() -> None:
    # The heir replayed requests from offset 40 (the old checkpoint); the topic ended at 55.
    log = RequestLog(20, {TOPIC: 55}, replayed_from={TOPIC: 40}, replayed=["a"], now_ms=T0)
    assert log.checkpoint_offsets([], []) == {TOPIC: 40}, "a must be found again after a crash"
    log.committed(21, ["b"], [], {TOPIC: 55}, now_ms=T0 + 50)
    assert log.checkpoint_offsets([], []) == {TOPIC: 40}
    assert log.checkpoint_offsets(["a"], []) == {TOPIC: 55}


def test_quiet_ticks_write_states_and_busy_ones_only_overdue_ones_as_many_as_they_fire() -> None:
    log = RequestLog(seq=0, end_offsets={TOPIC: 0})
    log.committed(1, [f"j{i}" for i in range(100)], [], {TOPIC: 0}, now_ms=T0)
    due = log.states_due
    assert due(fired=0, backlog=0, max_batch=30, lag_ms=0, now_ms=T0) == [
        f"j{i}" for i in range(30)
    ]
    assert due(fired=20, backlog=0, max_batch=30, lag_ms=0, now_ms=T0) == []  # batch > half full
    assert due(fired=0, backlog=0, max_batch=30, lag_ms=10_000, now_ms=T0 + 1_000) == []
    assert due(fired=30, backlog=500, max_batch=30, lag_ms=0, now_ms=T0 + 1_000) == []
    overdue = due(fired=30, backlog=500, max_batch=30, lag_ms=0, now_ms=T0 + MAX_UNSAVED_AGE_MS + 1)
    assert len(overdue) == 30, "as many as the busy tick fires"


def test_a_quiet_tick_holds_its_states_while_another_partition_bursts_within_the_bounds() -> None:
    log = RequestLog(seq=0, end_offsets={TOPIC: 0})
    log.committed(1, [f"j{i}" for i in range(100)], [], {TOPIC: 0}, now_ms=T0)
    due = log.states_due
    quiet = {"fired": 0, "backlog": 0, "max_batch": 30, "lag_ms": 0}
    assert due(**quiet, now_ms=T0, burst_under_way=True) == [], "the burst's turn: requests only"
    assert due(**quiet, now_ms=T0, burst_under_way=False) == [f"j{i}" for i in range(30)]
    overdue = due(**quiet, now_ms=T0 + MAX_UNSAVED_AGE_MS + 1, burst_under_way=True)
    assert len(overdue) == 30, "held no longer than MAX_UNSAVED_AGE_MS"


def test_a_quiet_tick_holds_no_more_than_max_deferred_states() -> None:
    log = RequestLog(seq=0, end_offsets={TOPIC: 0})
    log.committed(1, [f"j{i}" for i in range(MAX_DEFERRED_STATES + 1)], [], {TOPIC: 0}, now_ms=T0)
    due = log.states_due(
        fired=0, backlog=0, max_batch=30, lag_ms=0, now_ms=T0, burst_under_way=True
    )
    assert due == [f"j{i}" for i in range(30)], "past the bound a quiet tick writes what fits"


def test_a_tick_bursts_while_occurrences_wait_or_its_batch_is_over_half_full() -> None:
    assert bursting(fired=0, backlog=1, max_batch=30)
    assert bursting(fired=15, backlog=0, max_batch=30)
    assert not bursting(fired=14, backlog=0, max_batch=30)
    assert bursting(fired=16, backlog=0, max_batch=31)
    assert not bursting(fired=15, backlog=0, max_batch=31)
    # The opposite of the tick that writes states: exactly the ticks states_due calls quiet.
    log = RequestLog(seq=0, end_offsets={TOPIC: 0})
    log.committed(1, ["a"], [], {TOPIC: 0}, now_ms=T0)
    for fired in range(32):
        for backlog in (0, 3):
            writes = log.states_due(fired=fired, backlog=backlog, max_batch=31, lag_ms=0, now_ms=T0)
            assert bool(writes) is not bursting(fired=fired, backlog=backlog, max_batch=31)
