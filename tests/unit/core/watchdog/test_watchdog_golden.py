"""Building blocks for the watchdog evaluator's tests: definitions and the records a healthy
(or unhealthy) job leaves in the logs, as the services write them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from tickwheel.core.identity import execution_id
from tickwheel.core.jitter import jitter_offset_ms
from tickwheel.core.watchdog import Observed, Thresholds, Transition, WatchdogState, evaluate

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z, on a whole minute
S = 1000


def definition(
    job_id: str,
    cron: str = "*/2 * * * * *",
    *,
    version: int = 1,
    enabled: bool = True,
    created: int = T0,
    updated: int | None = None,
    timezone: str = "UTC",
    emi: str | None = "6s",
    jitter: str | None = "0s",
    tenant: str = "acme",
) -> Observed:
    record = {
        "jobId": job_id, "version": version, "type": "noop", "payload": "{}", "cron": cron,
        "timezone": timezone, "priority": "normal", "maxAttempts": 3,
        "expectedMaxInterval": emi, "jitter": jitter, "tenantId": tenant, "enabled": enabled,
        "createdAt": created, "updatedAt": created if updated is None else updated,
        "runAt": None, "dstPolicy": None,
    }  # fmt: skip
    return Observed("definition", job_id, record)


def request(job_id: str, slot: int, at: int, attempt: int = 1, tenant: str = "acme",
            priority: str = "normal") -> Observed:  # fmt: skip
    return Observed("request", job_id, {
        "execution_id": execution_id(job_id, 1, slot), "job_id": job_id, "job_version": 1,
        "job_type": "noop", "tenant_id": tenant, "priority": priority, "attempt": attempt,
        "scheduled_time": slot, "fire_time": slot, "requested_at": at, "trigger": "scheduled",
    })  # fmt: skip


def event(job_id: str, slot: int, kind: str, at: int, attempt: int = 1,
          worker: str | None = "w1", tenant: str = "acme") -> Observed:  # fmt: skip
    return Observed("event", job_id, {
        "event_id": f"{job_id}:{slot}:{kind}:{attempt}", "event_time": at, "event_type": kind,
        "job_id": job_id, "job_type": "noop", "tenant_id": tenant,
        "execution_id": execution_id(job_id, 1, slot), "attempt": attempt,
        "scheduled_time": slot, "fire_time": slot, "worker_id": worker,
    })  # fmt: skip


def healthy_run(job_id: str, slot: int, fire: int, run_ms: int = 300) -> list[Observed]:
    """What one slot that fired on time and succeeded leaves behind."""
    return [
        request(job_id, slot, fire + 5),
        event(job_id, slot, "leased", fire + 20),
        event(job_id, slot, "succeeded", fire + 20 + run_ms),
    ]


def healthy_log(job_id: str, schedule: Any, start: int, end: int, jitter_ms: int) -> list[Observed]:
    out: list[Observed] = []
    for slot in schedule.occurrences(start, end):
        out.extend(healthy_run(job_id, slot, slot + jitter_offset_ms(job_id, slot, jitter_ms)))
    return out


def run(
    batches: Iterable[tuple[int, list[Observed]]],
    thresholds: Thresholds,
    state: WatchdogState | None = None,
) -> list[Transition]:
    """Fold each batch, then evaluate at its watermark; every transition, in order."""
    state = state or WatchdogState()
    out: list[Transition] = []
    for watermark, batch in batches:
        for observed in batch:
            state.apply(observed)
        out.extend(evaluate(state, watermark, thresholds)[0])
    return out


def by_time(log: list[Observed]) -> list[tuple[int, Observed]]:
    def at(o: Observed) -> int:
        assert o.record is not None
        return int(o.record.get("event_time") or o.record.get("requested_at") or 0)

    return [(at(o), o) for o in log]


def batched(
    log: list[Observed], start: int, end: int, step: int
) -> list[tuple[int, list[Observed]]]:
    """Evaluations every `step` ms in (start, end]; each folds the inputs up to it."""
    timed = sorted(by_time(log), key=lambda pair: pair[0])
    batches, i = [], 0
    for watermark in range(start + step, end + 1, step):
        batch = []
        while i < len(timed) and timed[i][0] <= watermark:
            batch.append(timed[i][1])
            i += 1
        batches.append((watermark, batch))
    return batches


# -- golden cases ---------------------------------------------------------------------------
QUICK = Thresholds(resolve_after_ms=0, update_every_ms=10 * S, oldest_ready_age_ms=60 * S,
                   dead_letter_age_ms=60 * S)  # fmt: skip


def kinds(transitions: list[Transition]) -> list[tuple[str, str, str]]:
    return [(t.incident.kind, t.incident.subject, t.transition) for t in transitions]


def details(transition: Transition) -> dict[str, Any]:
    document = json.loads(transition.record()["details"])
    assert document["transition"] == transition.transition
    return dict(document["evidence"])


def test_a_healthy_job_raises_nothing() -> None:
    from tickwheel.core.watchdog.jobs import job_spec

    defn = definition("ok")
    assert defn.record is not None
    spec = job_spec("ok", defn.record)
    assert spec is not None
    log = [defn, *healthy_log("ok", spec.schedule, T0, T0 + 120 * S, 0)]
    assert run(batched(log, T0 - S, T0 + 120 * S, S), QUICK) == []


def test_a_job_that_never_fires_opens_once_with_never_fired_slots() -> None:
    batches = [(T0 + s * S, [definition("j")] if s == 0 else []) for s in range(0, 12)]
    got = run(batches, QUICK)
    assert kinds(got) == [("job_overdue", "j", "opened")]  # one incident, no update storm
    [opened] = got
    assert opened.at == T0 + 6 * S  # created + expectedMaxInterval, on event time
    evidence = details(opened)
    assert evidence["since"] == "created" and evidence["derived"] is False
    assert {s["diagnosis"] for s in evidence["slots"]} == {"never_fired"}
    assert opened.record()["alert_id"] == f"{opened.incident.incident_id}:1"


@pytest.mark.parametrize(
    ("events", "diagnosis"),
    [
        ([], "fired_not_started"),
        ([("leased", 1)], "running"),
        ([("leased", 1), ("heartbeat", 1)], "running"),
        ([("leased", 1), ("failed", 1), ("retry_scheduled", 1)], "failed_retrying"),
        ([("leased", 1), ("failed", 1), ("dead_lettered", 1)], "dead_lettered"),
    ],
)
def test_each_owed_slot_is_diagnosed_from_the_events_seen(
    events: list[tuple[str, int]], diagnosis: str
) -> None:
    slot = T0 + 2 * S
    log = [definition("j"), request("j", slot, slot + 5)]
    log += [
        event("j", slot, kind, slot + 100 + i, attempt) for i, (kind, attempt) in enumerate(events)
    ]
    got = run([(T0 + 3 * S, log), (T0 + 7 * S, [])], QUICK)
    [opened] = [t for t in got if t.incident.kind == "job_overdue"]
    by_slot = {s["slot"]: s for s in details(opened)["slots"]}
    assert by_slot[slot]["diagnosis"] == diagnosis
    assert by_slot[T0 + 4 * S]["diagnosis"] == "never_fired"


def test_a_late_success_resolves_the_incident_and_says_so() -> None:
    slot = T0 + 2 * S
    batches = [(T0 + 7 * S, [definition("j")]), (T0 + 9 * S, healthy_run("j", slot, T0 + 8 * S))]
    got = run(batches, QUICK)
    assert kinds(got) == [("job_overdue", "j", "opened"), ("job_overdue", "j", "resolved")]
    resolved = got[1]
    assert details(resolved)["reason"] == "succeeded"
    assert details(resolved)["diagnosis"] == "succeeded_late"
    lifecycle = json.loads(resolved.record()["details"])
    assert lifecycle["state"] == "resolved" and lifecycle["resolved_at"] == T0 + 9 * S


def test_paused_time_does_not_count_and_a_resume_restarts_the_interval() -> None:
    paused = definition("j", version=2, enabled=False, updated=T0 + 1 * S)
    resumed = definition("j", version=3, enabled=True, updated=T0 + 60 * S)
    batches = [(T0 + 1 * S, [definition("j"), paused])]
    batches += [(T0 + s * S, []) for s in range(2, 60)]
    batches += [(T0 + 60 * S, [resumed]), (T0 + 65 * S, []), (T0 + 66 * S, [])]
    got = run(batches, QUICK)
    assert kinds(got) == [("job_overdue", "j", "opened")]
    assert got[0].at == T0 + 66 * S and details(got[0])["since"] == "resumed"


def test_pausing_an_overdue_job_resolves_its_incident() -> None:
    batches = [(T0 + 7 * S, [definition("j")]),
               (T0 + 8 * S, [definition("j", version=2, enabled=False, updated=T0 + 8 * S)])]  # fmt: skip
    got = run(batches, QUICK)
    assert kinds(got)[-1] == ("job_overdue", "j", "resolved")
    assert details(got[-1])["reason"] == "paused"


def test_a_deleted_job_resolves_and_owes_nothing() -> None:
    batches = [(T0 + 7 * S, [definition("j")]), (T0 + 8 * S, [Observed("definition", "j", None)]),
               (T0 + 60 * S, [])]  # fmt: skip
    got = run(batches, QUICK)
    assert kinds(got) == [("job_overdue", "j", "opened"), ("job_overdue", "j", "resolved")]


def test_without_expected_max_interval_one_is_derived_from_the_schedule() -> None:
    hourly = definition("h", "0 * * * *", emi=None, jitter=None)
    # Largest gap 1 h, default jitter 60 s, grace max(60 s, half the gap).
    derived = 3600 * S + 60 * S + 1800 * S
    got = run([(T0 + derived - 1, [hourly]), (T0 + derived, [])], QUICK)
    [opened] = got
    assert opened.at == T0 + derived and details(opened)["derived"] is True
    assert details(opened)["expected_max_interval_ms"] == derived


def test_a_weekday_schedule_derives_its_weekend_gap() -> None:
    from tickwheel.core.watchdog.jobs import effective_interval, job_spec

    defn = definition("w", "0 9 * * 1-5", emi=None, jitter="0s")
    assert defn.record is not None
    spec = job_spec("w", defn.record)
    assert spec is not None
    interval = effective_interval(spec)
    assert interval is not None and interval.derived
    assert interval.ms == 72 * 3600 * S + 36 * 3600 * S  # Fri 09:00 -> Mon 09:00, plus half


def test_an_enabled_job_with_no_future_occurrence_is_a_broken_chain() -> None:
    from dataclasses import replace

    from tickwheel.core.schedule import CompiledOneOff
    from tickwheel.core.watchdog.jobs import job_spec

    state = WatchdogState()
    state.apply(definition("c", emi="1h"))
    spec = state.facts.jobs["c"].spec
    assert spec is not None
    # A recurring schedule whose last occurrence has passed (an ended chain).
    ended = replace(spec.profile, schedule=CompiledOneOff(T0 + 2 * S))
    state.facts.jobs.set_spec("c", replace(spec, profile=ended))
    got = run([(T0 + 10 * S, [])], QUICK, state)
    assert kinds(got) == [("broken_chain", "c", "opened")]
    assert got[0].record()["severity"] == "critical"
    assert job_spec("c", {}) is None


def test_dead_letters_alert_on_age_per_tenant_and_job_type_and_resolve_on_a_redrive() -> None:
    slot = T0
    dead = [event("j", slot, "dead_lettered", T0 + S, attempt=3, tenant="t1")]
    other = [event("k", slot, "dead_lettered", T0 + 50 * S, attempt=1, tenant="t2")]
    got = run([(T0 + 60 * S, [definition("j", emi="1d"), *dead, *other]), (T0 + 61 * S, [])], QUICK)
    assert kinds(got) == [("dead_letter_age", "t1/noop", "opened")]
    assert details(got[0])["count"] == 1 and details(got[0])["oldest_at"] == T0 + S
    redrive = request("j", slot, T0 + 62 * S, attempt=4, tenant="t1")
    more = run(
        [(T0 + 62 * S, [*dead, *other, redrive])], QUICK, _replay([*dead, *other], T0 + 61 * S)
    )
    assert ("dead_letter_age", "t1/noop", "resolved") in kinds(more)


def _replay(log: list[Observed], watermark: int) -> WatchdogState:
    state = WatchdogState()
    for observed in log:
        state.apply(observed)
    evaluate(state, watermark, QUICK)
    return state


def test_oldest_ready_age_is_about_age_never_depth() -> None:
    backfill = [request(f"b{i}", T0 + i, T0 + 100 * S, priority="low") for i in range(10_000)]
    assert run([(T0 + 104 * S, backfill)], QUICK) == []  # 10,000 deep, 4 s old: a backfill
    stuck = [request("s", T0, T0 + S, tenant="t9", priority="high")]
    got = run([(T0 + 62 * S, stuck)], QUICK)
    # Nothing of that priority was ever taken: the parent says why (tests/.../parents).
    assert kinds(got) == [("no_live_worker", "high", "opened"),
                          ("oldest_ready_age", "high/t9", "opened")]  # fmt: skip
    leased = event("s", T0, "leased", T0 + 63 * S, tenant="t9")
    state = _replay(stuck, T0 + 62 * S)
    assert sorted(kinds(run([(T0 + 64 * S, [leased])], QUICK, state))) == [
        ("no_live_worker", "high", "resolved"),
        ("oldest_ready_age", "high/t9", "resolved"),
    ]


def test_a_flapping_condition_is_one_incident() -> None:
    slow = Thresholds(resolve_after_ms=30 * S, update_every_ms=600 * S)
    # Successes 12 s apart (6 s allowed) three times, then every 2 s: overdue, clear, overdue...
    slots = [T0 + 8 * S, T0 + 20 * S, *range(T0 + 32 * S, T0 + 120 * S, 2 * S)]
    batches = [(T0 + S, [definition("j")])]
    for second in range(2, 120):
        batch = []
        for slot in slots:
            if slot == T0 + second * S:
                batch += healthy_run("j", slot, slot)
        batches.append((T0 + second * S, batch))
    got = run(batches, slow)
    assert kinds(got) == [("job_overdue", "j", "opened"), ("job_overdue", "j", "resolved")]
    assert details(got[1])["flaps"] == 2 and got[0].incident.number == got[1].incident.number


def test_an_escalation_updates_the_incident_without_reopening_it() -> None:
    got = run([(T0 + s * S, [definition("j")] if s == 0 else []) for s in range(0, 14)], QUICK)
    assert kinds(got) == [("job_overdue", "j", "opened"), ("job_overdue", "j", "updated")]
    assert got[1].record()["severity"] == "critical" and got[1].record()["alert_id"].endswith(":2")


def test_restored_incidents_continue_without_a_second_open() -> None:
    first = WatchdogState()
    log = [definition("j")]
    got = run([(T0 + 7 * S, log)], QUICK, first)
    assert kinds(got) == [("job_overdue", "j", "opened")]
    # What the service persists (incidents, the watermark) plus the inputs replayed.
    from tickwheel.core.watchdog import Incident

    second = WatchdogState(watermark=first.watermark)
    second.incidents = {fp: Incident.from_dict(i.to_dict()) for fp, i in first.incidents.items()}
    later = run([(T0 + 7 * S, log), (T0 + 8 * S, [])], QUICK, second)
    assert later == []
    after = run([(T0 + 9 * S, healthy_run("j", T0 + 8 * S, T0 + 8 * S))], QUICK, second)
    assert kinds(after) == [("job_overdue", "j", "resolved")]
    assert after[0].record()["alert_id"] == f"{got[0].incident.incident_id}:2"


def test_a_second_incident_after_a_resolve_has_a_new_id() -> None:
    batches = [(T0 + 7 * S, [definition("j")]),
               (T0 + 9 * S, healthy_run("j", T0 + 8 * S, T0 + 8 * S)),
               (T0 + 16 * S, [])]  # fmt: skip
    got = run(batches, QUICK)
    assert [t.transition for t in got] == ["opened", "resolved", "opened"]
    assert got[0].incident.incident_id != got[2].incident.incident_id
    assert got[2].incident.incident_id.endswith("-2")


def test_an_evaluation_never_goes_back_in_event_time() -> None:
    state = WatchdogState()
    state.apply(definition("j"))
    assert evaluate(state, T0 + 7 * S, QUICK)[0]
    assert evaluate(state, T0 + 3 * S, QUICK) == ([], set())


def test_a_dead_letter_an_operator_retried_or_discarded_stops_counting() -> None:
    """A retry runs as a new execution and a discard runs nothing, so only the resolution
    (executions.dlq.resolutions) can clear the letter's age; read before or after it."""
    slot = T0
    dead = event("j", slot, "dead_lettered", T0 + S, attempt=3, tenant="t1")
    resolved = Observed("dead_letter_resolution", "dlq:x", {
        "resolution_id": "r1", "dead_letter_id": "dlq:x", "event_time": T0 + 62 * S,
        "action": "discarded", "by": "ops", "note": None, "job_id": "j",
        "execution_id": execution_id("j", 1, slot), "tenant_id": "t1",
    })  # fmt: skip
    got = run([(T0 + 60 * S, [definition("j", emi="1d"), dead]), (T0 + 61 * S, [])], QUICK)
    assert kinds(got) == [("dead_letter_age", "t1/noop", "opened")]
    more = run([(T0 + 62 * S, [resolved]), (T0 + 63 * S, [])], QUICK,
               _replay([definition("j", emi="1d"), dead], T0 + 61 * S))  # fmt: skip
    assert ("dead_letter_age", "t1/noop", "resolved") in kinds(more)
    # Read in the other order (the resolution first), the letter never counts.
    early = run([(T0 + 63 * S, [definition("j", emi="1d"), resolved, dead])], QUICK)
    assert "dead_letter_age" not in {kind for kind, _, _ in kinds(early)}
