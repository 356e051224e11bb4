"""Jobs on one schedule due at one slot (a cohort) share what a request takes from the
schedule and the slot, computed once (decision 0185): every request still equals the one its
job would get alone, and editing or pausing one job of a cohort touches that job only."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.core.timer import jobs as jobs_module
from tickwheel.core.timer import occurrences
from tickwheel.core.timer.jobs import cohort_next_after, entry_from_definition, shared_next_after
from tickwheel.core.timer.occurrences import request_record
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.scheduler import PartitionTimer

T0 = 1_800_000_000_000  # a whole minute
MINUTE = 60_000
CRON = "* * * * *"


def _forget_cohorts() -> None:
    """As if no request had been built before: nothing a cohort left behind is reused."""
    occurrences._LAST_COHORT[0] = None
    jobs_module._LAST_NEXT[0] = None


def _spec(job_id: str, **fields: Any) -> dict[str, Any]:
    return {"jobId": job_id, "type": "noop", "jitter": "0s", "cron": CRON, **fields}


def _timer(specs: list[dict[str, Any]]) -> PartitionTimer:
    start = T0 - 1_000  # restored a second before the cohort's first slot
    timer = PartitionTimer(0, horizon_ms=3_600_000, tick_ms=50, start_ms=start, max_batch=10_000)
    for spec in specs:
        timer.load_definition(spec["jobId"], validate_job(spec, start - 1))
    timer.finish_restore(start)
    return timer


EDITED = ("c-2", "c-3", "c-4")


def _edit(timer: PartitionTimer, job_id: str, now: int) -> None:
    """One job of the cohort edited: c-2 another payload, c-3 paused, c-4 given a template."""
    spec = {
        "c-2": _spec("c-2", payload={"edited": True}),
        "c-3": _spec("c-3", enabled=False),
        "c-4": _spec("c-4", payloadTemplate='{"at": "{{ scheduledTime }}"}'),
    }[job_id]
    timer.apply_definition(job_id, validate_job(spec, now, version=2), now)


COHORT = [_spec(f"c-{i}", tenantId=f"t-{i % 2}", payload={"n": i}) for i in range(6)]


def _fired(timer: PartitionTimer, now: int) -> dict[str, list[dict[str, Any]]]:
    by_job: dict[str, list[dict[str, Any]]] = {}
    for request in timer.tick(now).requests:
        by_job.setdefault(request["job_id"], []).append(dict(request))
    return by_job


def test_each_request_of_a_cohort_is_the_one_its_job_gets_alone_after_an_edit_and_a_pause() -> None:
    together = _timer(COHORT)
    alone = {spec["jobId"]: _timer([spec]) for spec in COHORT}
    for job_id in EDITED:
        _edit(together, job_id, T0 - 500)
        _edit(alone[job_id], job_id, T0 - 500)
    for now in (T0, T0 + MINUTE + 40):
        fired = _fired(together, now)
        expected: dict[str, list[dict[str, Any]]] = {}
        for timer in alone.values():
            _forget_cohorts()
            expected.update(_fired(timer, now))
        assert fired == expected
        assert "c-3" not in fired, "the paused job of the cohort fired"
        assert (
            fired["c-2"][0]["job_version"] == 2 and fired["c-2"][0]["payload"] == '{"edited":true}'
        )
        assert fired["c-4"][0]["payload"] != fired["c-5"][0]["payload"], "c-4's template rendered"
        assert fired["c-0"][0]["payload"] == '{"n":0}' and fired["c-1"][0]["payload"] == '{"n":1}'
        assert {job for job in fired if fired[job][0]["job_version"] == 1} == {"c-0", "c-1", "c-5"}
    assert together.jobs["c-3"].handle is None, "the paused job left the wheel"
    assert {job: together.jobs[job].next_ms for job in ("c-0", "c-2", "c-5")} == dict.fromkeys(
        ("c-0", "c-2", "c-5"), T0 + 2 * MINUTE
    )


JOBS = [
    entry_from_definition(validate_job(spec, T0 - 1))
    for spec in [
        _spec("a", payload={"n": 1}),
        _spec("b", tenantId="other", priority="high", maxAttempts=3, queue="q"),
        _spec("c", payloadTemplate='{"from": "{{ periodStart }}"}'),
        {**_spec("d"), "cron": "*/5 * * * *"},
        {**_spec("e"), "cron": "0 * * * *", "maxRunTime": "30s"},
    ]
]

FIELDS = (
    st.sampled_from([T0, T0 + 60 * MINUTE, T0 + 120 * MINUTE]),  # a slot of every job
    st.sampled_from([T0, T0 + 500, T0 + 60 * MINUTE]),  # the fire time, any slot's
    st.sampled_from([T0, T0 + 2_500, T0 + 60 * MINUTE + 100]),  # when it is emitted
    st.sampled_from(["scheduled", "catch_up", "manual"]),
    st.sampled_from([None, T0 - MINUTE, T0 - 5 * MINUTE]),  # the job's previous slot
    st.sampled_from([(30, 10), (60, 20)]),
    st.sampled_from([None, "run-1"]),
)
instants = st.tuples(*FIELDS)
# Mostly cohorts: a call keeps the previous call's instants but for the ones it draws anew
# (a list of (field, value)), so two calls differ in one field as often as in several.
changes = st.lists(
    st.integers(0, len(FIELDS) - 1).flatmap(lambda i: st.tuples(st.just(i), FIELDS[i])),
    max_size=2,
)
calls = st.tuples(st.sampled_from(range(len(JOBS))), changes)


@settings(max_examples=300, deadline=None)
@given(instants, st.lists(calls, min_size=1, max_size=12))
def test_a_request_built_after_others_equals_the_one_built_first(
    first: tuple[Any, ...], sequence: list[tuple[int, list[tuple[int, Any]]]]
) -> None:
    params = list(first)
    for index, changed in sequence:
        for field, value in changed:
            params[field] = value
        slot, fire_ms, now_ms, trigger, previous, terms, run_id = params
        args = (JOBS[index], slot, fire_ms, now_ms, trigger, previous, terms, run_id)
        after_others = request_record(*args)
        _forget_cohorts()
        assert after_others == request_record(*args)
        assert list(after_others) == list(request_record(*args)), "the record's field order"


@given(st.lists(st.tuples(st.sampled_from(range(len(JOBS))), st.integers(T0, T0 + 10**9))))
def test_the_cohort_next_slot_is_the_schedule_s_next_slot(asks: list[tuple[int, int]]) -> None:
    for index, after in asks:
        schedule = JOBS[index].schedule
        assert cohort_next_after(schedule, after) == shared_next_after.__wrapped__(schedule, after)
