"""The owner's decisions about executions: leases, fencing, retries, dead letters, overlap and
tenant caps — driven with plain millisecond arguments (a fake clock)."""

from __future__ import annotations

import random
from typing import Any

from tests.unit.core.timer.test_timer_scheduler import T0, _job
from tickwheel.core.timer.executions import LEASE_GRACE_MS, MAX_LEASE_HOLD_MS
from tickwheel.services.timer.scheduler import PartitionTimer

LEASE_MS = 30_000


def _timer(**kwargs: Any) -> PartitionTimer:
    return PartitionTimer(
        0, 3_600_000, 10, T0, 10_000, rng=kwargs.pop("rng", random.Random(7)), **kwargs
    )


def _worker_event(
    request: dict[str, Any], kind: str, now: int, worker: str = "w1", **extra: Any
) -> dict[str, Any]:
    return {
        "event_id": f"{kind}:{request['execution_id']}:{request['attempt']}:{worker}:{now}",
        "event_time": now,
        "event_type": kind,
        "job_id": request["job_id"],
        "job_type": request["job_type"],
        "tenant_id": request["tenant_id"],
        "execution_id": request["execution_id"],
        "attempt": request["attempt"],
        "scheduled_time": request["scheduled_time"],
        "fire_time": request["fire_time"],
        "worker_id": worker,
        "lease_deadline": now + LEASE_MS if kind in ("leased", "heartbeat") else None,
        "error": extra.get("error"),
        "error_kind": extra.get("error_kind"),
        "reason": None,
        "details": None,
    }


def _fired(timer: PartitionTimer, job_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    timer.load_definition(job_id, _job(job_id, **spec))
    timer.finish_restore(T0)
    requests = timer.tick(T0 + 60_000).requests
    assert len(requests) == 1
    return requests[0]


def test_an_expired_lease_reissues_the_same_execution_as_attempt_two() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    timer.on_execution_event(_worker_event(first, "leased", T0 + 60_100), T0 + 60_100)
    deadline = T0 + 60_100 + LEASE_MS + LEASE_GRACE_MS
    assert timer.tick(deadline - 20).requests == []
    emission = timer.tick(deadline + 20)
    [second] = emission.requests
    assert second["execution_id"] == first["execution_id"]
    assert (second["attempt"], second["trigger"]) == (2, "lease_expired")
    assert [e["reason"] for e in emission.events] == ["lease_expired"]
    assert emission.states["a"]["pending"][0]["attempt"] == 2


def test_heartbeats_keep_a_long_job_from_being_reissued() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    now = T0 + 60_100
    timer.on_execution_event(_worker_event(first, "leased", now), now)
    for _ in range(10):  # five lease lengths of work, a heartbeat every 15 s
        now += 15_000
        timer.on_execution_event(_worker_event(first, "heartbeat", now), now)
        assert timer.tick(now).requests == []
    succeeded = timer.on_execution_event(_worker_event(first, "succeeded", now), now)
    assert succeeded.states["a"]["pending"] == []
    assert timer.tick(now + 10 * LEASE_MS).requests == []


def test_a_late_outcome_of_a_replaced_attempt_is_fenced_and_changes_nothing() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    timer.on_execution_event(_worker_event(first, "leased", T0 + 60_100, "w1"), T0 + 60_100)
    [second] = timer.tick(T0 + 60_100 + LEASE_MS + LEASE_GRACE_MS + 20).requests
    late = T0 + 200_000
    stale = timer.on_execution_event(_worker_event(first, "succeeded", late, "w1"), late)
    assert [e["event_type"] for e in stale.events] == ["fenced"]
    assert stale.states == {}
    assert timer.executions.in_flight[first["execution_id"]].attempt == 2
    timer.on_execution_event(_worker_event(second, "leased", late, "w2"), late)
    done = timer.on_execution_event(_worker_event(second, "succeeded", late + 10, "w2"), late + 10)
    assert done.events == [] and done.states["a"]["pending"] == []


def test_retryable_failures_retry_with_jittered_backoff_then_succeed() -> None:
    delays = set()
    for seed in range(20):
        timer = _timer(rng=random.Random(seed))
        request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z", "maxAttempts": 5})
        now = T0 + 60_100
        timer.on_execution_event(_worker_event(request, "leased", now), now)
        failed = timer.on_execution_event(
            _worker_event(request, "failed", now, error="boom", error_kind="retryable"), now
        )
        [scheduled] = failed.events
        assert scheduled["event_type"] == "retry_scheduled"
        retry_at = timer.executions.in_flight[request["execution_id"]].deadline_ms
        assert retry_at is not None and now <= retry_at <= now + 2_000  # full jitter in [0, base*2]
        delays.add(retry_at - now)
        [retry] = timer.tick(retry_at + 20).requests
        assert (retry["attempt"], retry["trigger"]) == (2, "retry")
    assert len(delays) > 10  # not the same delay for everyone: no stampede


def test_permanent_failure_and_exhausted_attempts_are_dead_lettered() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    now = T0 + 60_100
    permanent = timer.on_execution_event(
        _worker_event(request, "failed", now, error="bad input", error_kind="permanent"), now
    )
    [letter] = permanent.dead_letters
    assert (letter["reason"], letter["error"], letter["attempt"]) == (
        "permanent_error",
        "bad input",
        1,
    )

    timer = _timer()
    request = _fired(timer, "b", {"runAt": "2027-01-15T08:01:00Z", "maxAttempts": 2})
    timer.on_execution_event(_worker_event(request, "failed", now, error="e1"), now)
    [retry] = timer.tick(now + 5_000).requests
    last = timer.on_execution_event(
        _worker_event(retry, "failed", now + 6_000, error="e2"), now + 6_000
    )
    [letter] = last.dead_letters
    assert (letter["reason"], letter["error"], letter["attempt"]) == (
        "max_attempts_exhausted",
        "e2",
        2,
    )


def test_in_flight_executions_survive_a_change_of_owner() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    emission = timer.on_execution_event(_worker_event(first, "leased", T0 + 60_100), T0 + 60_100)
    state = emission.states["a"]
    heir = PartitionTimer(0, 3_600_000, 10, T0 + 61_000, 10_000, rng=random.Random(1))
    heir.load_definition("a", _job("a", runAt="2027-01-15T08:01:00Z"))
    heir.load_state("a", state)
    assert heir.finish_restore(T0 + 61_000).requests == []  # the occurrence is not fired again
    # Heartbeats sent while nobody owned the partition are unread: a full lease from the restore.
    assert heir.tick(T0 + 60_100 + LEASE_MS + LEASE_GRACE_MS + 20).requests == []
    [second] = heir.tick(T0 + 61_000 + LEASE_MS + LEASE_GRACE_MS + 20).requests
    assert (second["execution_id"], second["attempt"]) == (first["execution_id"], 2)


def test_overlap_skip_records_the_slot_while_the_previous_run_goes_on() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="*/5 * * * * *", overlapPolicy="skip"))
    timer.finish_restore(T0)
    [first] = timer.tick(T0 + 5_000).requests
    second = timer.tick(T0 + 10_000)
    assert second.requests == []
    assert [(e["event_type"], e["scheduled_time"]) for e in second.events] == [
        ("skipped", T0 + 10_000)
    ]
    timer.on_execution_event(_worker_event(first, "succeeded", T0 + 11_000), T0 + 11_000)
    assert [r["scheduled_time"] for r in timer.tick(T0 + 15_000).requests] == [T0 + 15_000]


def test_a_tenant_at_its_cap_waits_while_other_tenants_fire() -> None:
    timer = _timer(tenant_max_in_flight=2)
    for i in range(5):
        timer.load_definition(
            f"big-{i}", _job(f"big-{i}", runAt="2027-01-15T08:01:00Z", tenantId="big")
        )
    timer.load_definition("small", _job("small", runAt="2027-01-15T08:01:00Z", tenantId="small"))
    timer.finish_restore(T0)
    fired = timer.tick(T0 + 60_000).requests
    assert sorted(r["tenant_id"] for r in fired) == ["big", "big", "small"]
    done = next(r for r in fired if r["tenant_id"] == "big")
    timer.on_execution_event(_worker_event(done, "succeeded", T0 + 61_000), T0 + 61_000)
    assert [r["tenant_id"] for r in timer.tick(T0 + 61_000).requests] == ["big"]


def test_a_manual_trigger_is_tracked_like_any_execution() -> None:
    timer = _timer()
    timer.load_definition("a", _job("a", cron="0 * * * *"))
    timer.finish_restore(T0)
    [manual] = timer.command(
        {"job_id": "a", "kind": "trigger", "requested_at": T0 + 5}, T0 + 10
    ).requests
    leased = timer.on_execution_event(_worker_event(manual, "leased", T0 + 20), T0 + 20)
    assert leased.events == []  # accepted, not fenced
    done = timer.on_execution_event(_worker_event(manual, "succeeded", T0 + 30), T0 + 30)
    assert done.events == [] and done.states["a"]["pending"] == []


def test_a_backfill_skips_an_occurrence_that_is_still_running() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"cron": "1 8 * * *"})
    backfill = timer.command(
        {"job_id": "a", "kind": "backfill", "requested_at": T0, "range_start": first["scheduled_time"] - 2 * 86_400_000,
         "range_end": first["scheduled_time"]},
        T0 + 61_000,
    )  # fmt: skip
    assert [r["scheduled_time"] for r in backfill.requests] == [
        first["scheduled_time"] - 86_400_000
    ]
    assert [e["reason"] for e in backfill.events] == ["backfill:in_flight"]


def test_a_second_worker_on_the_same_attempt_is_fenced_in_everything_it_reports() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    now = T0 + 60_100
    timer.on_execution_event(_worker_event(request, "leased", now, "w1"), now)
    for kind in ("leased", "heartbeat", "failed"):
        emission = timer.on_execution_event(
            _worker_event(request, kind, now + 10, "w2", error="x", error_kind="permanent"),
            now + 10,
        )
        assert [e["event_type"] for e in emission.events] == [
            "fenced"
        ] and not emission.dead_letters
    assert timer.executions.in_flight[request["execution_id"]].worker_id == "w1"


def test_restore_after_an_outage_keeps_in_flight_executions_in_the_state_it_writes() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"cron": "1 8 * * *", "maxAttempts": 5})
    now = T0 + 60_100
    failed = timer.on_execution_event(_worker_event(request, "failed", now, error="e"), now)
    state = failed.states["a"]
    later = now + 2 * 86_400_000
    heir = PartitionTimer(0, 3_600_000, 10, later, 10_000, rng=random.Random(1))
    heir.load_definition("a", _job("a", cron="1 8 * * *", maxAttempts=5))
    heir.load_state("a", state)
    emission = heir.finish_restore(later)
    assert emission.requests  # the outage was caught up ...
    pending = emission.states["a"]["pending"]
    assert [p["execution_id"] for p in pending if p["kind"] == "retry"] == [request["execution_id"]]


def test_deleting_a_job_keeps_its_in_flight_executions_until_they_finish() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    timer.on_execution_event(_worker_event(request, "leased", T0 + 60_100), T0 + 60_100)
    deleted = timer.apply_definition("a", None, T0 + 61_000)
    assert deleted.states["a"] is not None and len(deleted.states["a"]["pending"]) == 1
    done = timer.on_execution_event(_worker_event(request, "succeeded", T0 + 62_000), T0 + 62_000)
    assert done.states == {"a": None}  # now the tombstone


def test_an_expired_lease_waits_while_worker_events_lag_then_a_heartbeat_saves_it() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z"})
    timer.on_execution_event(_worker_event(request, "leased", T0 + 60_100), T0 + 60_100)
    deadline = T0 + 60_100 + LEASE_MS + LEASE_GRACE_MS
    # Events lag: the heartbeat that renewed the lease is still unread. Nothing is re-issued.
    for now in range(deadline + 10, deadline + 5_000, 100):
        assert timer.tick(now, hold_leases=True).requests == []
    heartbeat_at = deadline - 20_000  # sent in time, read late
    timer.on_execution_event(_worker_event(request, "heartbeat", heartbeat_at), deadline + 5_000)
    assert timer.tick(deadline + 5_100).requests == [], "the renewed lease stands"
    # The renewed lease runs on the owner's clock, from when the owner read the heartbeat.
    assert timer.tick(deadline + 5_000 + LEASE_MS).requests == []
    [second] = timer.tick(deadline + 5_000 + LEASE_MS + LEASE_GRACE_MS + 10).requests
    assert second["attempt"] == 2


def test_a_held_lease_still_expires_once_held_too_long_and_retries_never_wait() -> None:
    timer = _timer()
    request = _fired(timer, "a", {"runAt": "2027-01-15T08:01:00Z", "maxAttempts": 5})
    timer.on_execution_event(_worker_event(request, "leased", T0 + 60_100), T0 + 60_100)
    deadline = T0 + 60_100 + LEASE_MS + LEASE_GRACE_MS
    held = [r for now in range(deadline + 10, deadline + MAX_LEASE_HOLD_MS + 200, 100)
            for r in timer.tick(now, hold_leases=True).requests]  # fmt: skip
    assert [r["attempt"] for r in held] == [2], "a worker that is really gone is replaced"
    # A retry timer is the timer's own: lagging worker events cannot change it.
    now = deadline + MAX_LEASE_HOLD_MS + 300
    timer.on_execution_event(_worker_event(held[0], "leased", now, worker="w2"), now)
    failed = _worker_event(held[0], "failed", now, worker="w2", error="e", error_kind="retryable")
    timer.on_execution_event(failed, now)
    retry_at = timer.executions.in_flight[request["execution_id"]].deadline_ms
    assert retry_at is not None
    [third] = timer.tick(retry_at + 20, hold_leases=True).requests
    assert (third["attempt"], third["trigger"]) == (3, "retry")


def test_a_huge_backfill_never_makes_a_state_kafka_would_refuse() -> None:
    """A 10,000-slot backfill used to put 10,000 requests in one 2 MB TimerState: every
    transaction of the partition failed, and its restore re-read the command and failed again."""
    from tickwheel.services.timer.records import encode_state

    timer = _timer()
    payload = {"blob": "x" * 4_000}
    timer.load_definition("a", _job("a", cron="* * * * *", payload=payload))
    timer.finish_restore(T0)
    command = {"job_id": "a", "kind": "backfill", "requested_at": T0,
               "range_start": T0 - 10_000 * 60_000, "range_end": T0}  # fmt: skip
    emission = timer.command(command, T0)
    skipped = [e for e in emission.events if e["reason"] == "backfill:in_flight_budget"]
    assert emission.requests and skipped
    assert len(emission.requests) + len(skipped) == 10_000, "every slot fired or recorded"
    state = emission.states["a"]
    assert state is not None and len(encode_state(state, {}, 1)) < 1_000_000
    # Scheduled slots wait for room as well, whatever the overlap policy ...
    tick = timer.tick(T0 + 60_000)
    assert not tick.requests
    assert [(e["scheduled_time"], e["reason"]) for e in tick.events] == [
        (T0 + 60_000, "overlap:in_flight_budget")
    ]
    # ... which finishing executions make.
    for request in emission.requests[:3]:
        now = T0 + 60_500
        timer.on_execution_event(_worker_event(request, "leased", now), now)
        timer.on_execution_event(_worker_event(request, "succeeded", now), now)
    assert [r["scheduled_time"] for r in timer.tick(T0 + 120_000).requests] == [T0 + 120_000]


def _dead_lettered_run(timer: PartitionTimer, request: dict[str, Any], now: int) -> Any:
    """The worker leases `request` and fails it for good: what the owner writes then."""
    timer.on_execution_event(_worker_event(request, "leased", now), now)
    failed = _worker_event(request, "failed", now + 10, error="boom", error_kind="permanent")
    return timer.on_execution_event(failed, now + 10)


def _backfill(slot: int, command_id: str) -> dict[str, Any]:
    return {"command_id": command_id, "job_id": "a", "kind": "backfill", "requested_at": T0,
            "range_start": slot - 1, "range_end": slot}  # fmt: skip


def test_a_backfill_of_a_finished_slot_is_a_run_of_its_own_with_ids_its_retry_keeps() -> None:
    """Decision 0121: the rerun used the slot's execution id, so its timer events and its dead
    letter carried the first run's fixed ids and merged into it in the history."""

    def first_run_and_backfill(command_id: str) -> tuple[dict[str, Any], Any, Any, dict[str, Any]]:
        timer = _timer()
        first = _fired(timer, "a", {"cron": "1 8 * * *", "maxAttempts": 1})
        original = _dead_lettered_run(timer, first, T0 + 60_100)
        [rerun] = timer.command(
            _backfill(first["scheduled_time"], command_id), T0 + 70_000
        ).requests
        return first, original, _dead_lettered_run(timer, rerun, T0 + 70_100), rerun

    first, original, rerun_outcome, rerun = first_run_and_backfill("backfill-1")
    [first_letter], [rerun_letter] = original.dead_letters, rerun_outcome.dead_letters
    assert rerun["trigger"] == "backfill" and rerun["scheduled_time"] == first["scheduled_time"]
    assert rerun["execution_id"] != first_letter["execution_id"]
    assert rerun_letter["execution_id"] == rerun["execution_id"]
    assert rerun_letter["dead_letter_id"] != first_letter["dead_letter_id"]
    first_ids = {e["event_id"] for e in original.events}
    assert first_ids and not first_ids & {e["event_id"] for e in rerun_outcome.events}
    # The same command carried out again (read again after a restore) names the same run;
    # another backfill of the same slot is another run.
    assert first_run_and_backfill("backfill-1")[3]["execution_id"] == rerun["execution_id"]
    assert first_run_and_backfill("backfill-2")[3]["execution_id"] != rerun["execution_id"]


def test_a_backfills_retry_keeps_its_run_id() -> None:
    timer = _timer()
    first = _fired(timer, "a", {"cron": "1 8 * * *"})
    timer.on_execution_event(_worker_event(first, "succeeded", T0 + 60_100), T0 + 60_100)
    [rerun] = timer.command(_backfill(first["scheduled_time"], "b-1"), T0 + 70_000).requests
    timer.on_execution_event(_worker_event(rerun, "leased", T0 + 70_100), T0 + 70_100)
    [retry] = timer.tick(T0 + 70_100 + LEASE_MS + LEASE_GRACE_MS + 20).requests
    assert (retry["execution_id"], retry["attempt"]) == (rerun["execution_id"], 2)
    assert rerun["execution_id"] != first["execution_id"]
