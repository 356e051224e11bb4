"""Parents: a stalled timer partition or a priority nobody serves is one incident, and the
alerts it explains are its children — shown, marked suppressed, never notified on their own."""

from __future__ import annotations

import json
from dataclasses import replace

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    S,
    batched,
    definition,
    event,
    healthy_run,
    kinds,
    request,
    run,
)
from tickwheel.core.watchdog import Observed, Transition, WatchdogState, fingerprint


def on(partition: int, observed: Observed) -> Observed:
    return replace(observed, partition=partition)


def lifecycle(t: Transition) -> dict[str, object]:
    return dict(json.loads(t.record()["details"]))


def test_a_stalled_partition_is_one_parent_and_its_jobs_suppressed_children() -> None:
    jobs = [on(0, definition(f"p0-{n}")) for n in range(3)]
    other = [on(1, definition("p1-a"))]
    # Partition 1 keeps firing and its job succeeds; partition 0 fires nothing at all.
    alive = [on(1, o) if o.kind == "request" else o
             for slot in range(T0 + 2 * S, T0 + 20 * S, 2 * S)
             for o in healthy_run("p1-a", slot, slot)]  # fmt: skip
    batches = batched([*jobs, *other, *alive], T0, T0 + 20 * S, S)
    got = run(batches, QUICK)
    opened = [t for t in got if t.transition == "opened"]
    first = opened[0].incident
    assert (first.kind, first.subject) == ("timer_partition_stalled", "partition 0")
    parent_id = opened[0].incident.incident_id
    children = [t for t in opened if t.incident.kind == "job_overdue"]
    assert {t.incident.subject for t in children} == {"p0-0", "p0-1", "p0-2"}  # not p1-a
    for child in children:
        assert lifecycle(child)["suppressed_by"] == parent_id  # shown, marked
        assert lifecycle(child)["notify"] is False  # and not sent to people on its own
    assert lifecycle(opened[0])["notify"] is True
    assert json.loads(opened[0].record()["details"])["evidence"]["children"] == 3


def test_one_overdue_job_on_a_partition_is_no_parent() -> None:
    got = run([(T0 + 7 * S, [on(0, definition("alone"))])], QUICK)
    assert kinds(got) == [("job_overdue", "alone", "opened")]
    assert lifecycle(got[0])["suppressed_by"] is None and lifecycle(got[0])["notify"] is True


def test_a_partition_that_fires_is_not_stalled_even_with_jobs_overdue() -> None:
    jobs = [on(0, definition(f"p0-{n}")) for n in range(2)]
    # Something fired on partition 0 after the deadlines (another job): not a stall.
    fired = on(0, request("p0-other", T0 + 6 * S, T0 + 6 * S + 500))
    got = run([(T0 + 7 * S, [*jobs, fired])], QUICK)
    assert {t.incident.kind for t in got} == {"job_overdue"}


def test_children_whose_parent_resolves_first_become_news_of_their_own() -> None:
    state = WatchdogState()
    jobs = [on(0, definition(f"p0-{n}")) for n in range(2)]
    run([(T0 + 7 * S, jobs)], QUICK, state)
    # The partition fires again (one job runs late); the other job is still overdue.
    late = [on(0, o) if o.kind == "request" else o for o in healthy_run("p0-0", T0 + 6 * S,
                                                                        T0 + 8 * S)]  # fmt: skip
    got = run([(T0 + 9 * S, late)], QUICK, state)
    by = {(t.incident.kind, t.incident.subject): t for t in got}
    assert by[("timer_partition_stalled", "partition 0")].transition == "resolved"
    assert by[("job_overdue", "p0-0")].transition == "resolved"
    assert lifecycle(by[("job_overdue", "p0-0")])["notify"] is False  # never told, never told
    unsuppressed = by[("job_overdue", "p0-1")]
    assert unsuppressed.transition == "updated" and lifecycle(unsuppressed)["notify"] is True
    assert lifecycle(unsuppressed)["suppressed_by"] is None


def test_a_priority_nobody_serves_is_the_parent_of_its_ready_age() -> None:
    stuck = [request(f"s{n}", T0, T0 + S, priority="low", tenant=f"t{n}") for n in range(3)]
    got = run([(T0 + 62 * S, stuck)], QUICK)
    opened = {(t.incident.kind, t.incident.subject): t for t in got}
    parent = opened[("no_live_worker", "low")]
    fp = fingerprint("no_live_worker", "low")
    for n in range(3):
        child = opened[("oldest_ready_age", f"low/t{n}")]
        assert (
            lifecycle(child)["suppressed_by"] == f"{fp}-1" and lifecycle(child)["notify"] is False
        )
    assert lifecycle(parent)["evidence"]["waiting"] == 3  # type: ignore[index]


def test_a_slow_worker_is_not_an_absent_one() -> None:
    stuck = [request("s", T0, T0 + S, priority="low")]
    # Another low execution was taken after the stuck one was requested: a worker is there.
    other = [request("o", T0 + 2 * S, T0 + 2 * S, priority="low"),
             event("o", T0 + 2 * S, "leased", T0 + 30 * S)]  # fmt: skip
    got = run([(T0 + 62 * S, [*stuck, *other])], QUICK)
    assert kinds(got) == [("oldest_ready_age", "low/acme", "opened")]
    assert lifecycle(got[0])["notify"] is True
