"""Calendar, interval and bounded jobs through the real timer on the real broker.

The timer service runs in this process with a fake clock (the only thing not real: days
pass in seconds), reading its definitions and the `calendars` topic from the broker and
writing its requests there; the assertions read the request topics back.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.timer_harness import emitted_requests, publish_jobs, wait_until
from tickwheel.clock import FakeClock
from tickwheel.core.timefmt import format_utc, parse_iso_ms
from tickwheel.sdk.calendars import get_calendar, list_calendars, put_calendar
from tickwheel.services.timer.calendars import CALENDARS
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic as declared_topic

pytestmark = pytest.mark.integration

START = parse_iso_ms("2027-01-27T00:00:00Z", "start")  # a Wednesday


@pytest.fixture
def timer(kafka_bootstrap: str, applied_topology: str) -> Iterator[tuple[TimerService, FakeClock]]:
    """A timer service on the broker, in this process, on a fake clock at START; serving every
    partition before the test goes on."""
    clock = FakeClock(START / 1000)
    settings = TimerSettings(instance=f"t-{uuid.uuid4().hex[:6]}", group_id=f"g-{uuid.uuid4()}",
                             tick_ms=50)  # fmt: skip
    service = TimerService(settings, clock=clock)
    runner = threading.Thread(target=service.run, name="timer", daemon=True)
    runner.start()
    partitions = declared_topic("jobs.definitions").partitions
    try:
        assert wait_until(lambda: len(service.partitions) == partitions, 90), "never served"
        yield service, clock
    finally:
        service.stop()
        runner.join(30)
        for name in list(CALENDARS.known):
            CALENDARS.put(name, None)


def _advance(clock: FakeClock, until_ms: int, step_s: float) -> None:
    """Move the fake clock to `until_ms` in steps, giving the service's loop time between them
    (bounded: one step per `step_s` of fake time)."""
    steps = int((until_ms / 1000 - clock.now()) // step_s)
    for _ in range(max(steps, 0)):
        clock.advance(step_s)
        time.sleep(0.03)
    clock.set(until_ms / 1000)


def _first_attempts(job_id: str) -> Counter[int]:
    return Counter(
        r["scheduled_time"]
        for r in emitted_requests_cached()
        if r["job_id"] == job_id and r["attempt"] == 1
    )


_cache: dict[str, list[dict[str, Any]]] = {}


def emitted_requests_cached() -> list[dict[str, Any]]:
    return _cache["requests"]


def _read(bootstrap: str) -> None:
    _cache["requests"] = emitted_requests(bootstrap)


def _fired_by(bootstrap: str, job_id: str, slots: list[int]) -> bool:
    _read(bootstrap)
    return set(_first_attempts(job_id)) >= set(slots)


def test_a_business_day_job_fires_across_a_month_boundary_and_follows_a_calendar_edit(
    kafka_bootstrap: str, timer: tuple[TimerService, FakeClock]
) -> None:
    service, clock = timer
    name = f"uk-{uuid.uuid4().hex[:6]}"
    # Friday 29 January and Monday 1 February are holidays.
    put_calendar(name, ["2027-01-29", "2027-02-01"], bootstrap=kafka_bootstrap)
    assert get_calendar(name, bootstrap=kafka_bootstrap)["version"] == 1
    assert wait_until(lambda: name in CALENDARS.known, 30), "the timer never read the calendar"
    [record] = publish_jobs(
        kafka_bootstrap,
        [{"jobId": f"payout-{name}", "type": "noop", "jitter": "0s", "cron": "0 9 * * *",
          "timezone": "Europe/London", "calendar": name, "businessDays": "next"}],
        START,
    )  # fmt: skip
    job_id = record["jobId"]
    at = {day: parse_iso_ms(f"2027-{day}T09:00:00Z", "slot") for day in
          ("01-27", "01-28", "02-02", "02-03", "02-05")}  # fmt: skip
    _advance(clock, parse_iso_ms("2027-02-03T12:00:00Z", "t"), step_s=1800)
    first = [at["01-27"], at["01-28"], at["02-02"], at["02-03"]]
    assert wait_until(lambda: _fired_by(kafka_bootstrap, job_id, first), 60), _first_attempts(
        job_id
    )
    fired = _first_attempts(job_id)
    # The holiday, the weekend and the next holiday all landed on Tuesday 2 February, once.
    assert sorted(fired) == first, [format_utc(s) for s in fired]
    assert all(n == 1 for n in fired.values())

    # Thursday 4 February becomes a holiday while the timer runs: its slot moves to Friday.
    put_calendar(name, ["2027-01-29", "2027-02-01", "2027-02-04"], bootstrap=kafka_bootstrap)
    assert [c["version"] for c in list_calendars(bootstrap=kafka_bootstrap)] == [2]

    def follows_the_edit() -> bool:
        runtime = service.partitions.get(_partition_of(service, job_id))
        job = None if runtime is None else runtime.timer.jobs.get(job_id)
        return job is not None and job.next_ms == at["02-05"]

    assert wait_until(follows_the_edit, 30), "the edit never reached the job"
    _advance(clock, parse_iso_ms("2027-02-05T12:00:00Z", "t"), step_s=1800)
    assert wait_until(lambda: _fired_by(kafka_bootstrap, job_id, [at["02-05"]]), 60)
    fired = _first_attempts(job_id)
    assert sorted(fired) == [*first, at["02-05"]], [format_utc(s) for s in fired]
    assert all(n == 1 for n in fired.values())


def _partition_of(service: TimerService, job_id: str) -> int:
    for partition, runtime in service.partitions.items():
        if job_id in runtime.timer.jobs:
            return partition
    return -1


def test_interval_and_bounded_jobs_fire_their_slots_once_and_then_stop(
    kafka_bootstrap: str, timer: tuple[TimerService, FakeClock]
) -> None:
    _, clock = timer
    tag = uuid.uuid4().hex[:6]
    interval, bounded, ended = f"every-{tag}", f"bounded-{tag}", f"ended-{tag}"
    publish_jobs(
        kafka_bootstrap,
        [
            # Every 30 s from START+10 s, until START+100 s (inclusive): 4 slots.
            {"jobId": interval, "type": "noop", "jitter": "0s", "every": "30s",
             "phase": format_utc(START + 10_000), "endAt": format_utc(START + 100_000)},
            # Every 20 s, the first 3 slots from START+30 s on: +40, +60, +80.
            {"jobId": bounded, "type": "noop", "jitter": "0s", "cron": "*/20 * * * * *",
             "startAt": format_utc(START + 30_000), "maxRuns": 3},
            # Several specs, the union once: every 40 s and every 60 s, until START+120 s.
            {"jobId": ended, "type": "noop", "jitter": "0s",
             "schedules": [{"every": "40s"}, {"every": "60s"}],
             "endAt": format_utc(START + 120_000)},
            # A witness: once its slot at +610 s is out, every partition ticked past +600 s.
            {"jobId": f"witness-{tag}", "type": "noop", "jitter": "0s", "every": "10s"},
        ],
        START,
    )  # fmt: skip
    _advance(clock, START + 300_000, step_s=2)
    want = {
        interval: [START + k for k in (10_000, 40_000, 70_000, 100_000)],
        bounded: [START + k for k in (40_000, 60_000, 80_000)],
        ended: [START + k for k in (40_000, 60_000, 80_000, 120_000)],
    }
    assert wait_until(lambda: all(_fired_by(kafka_bootstrap, j, s) for j, s in want.items()), 60)
    # Long after their last slot: nothing more came. (Every partition ticks in each loop, so
    # the witness's +610 s slot means every partition has ticked at +600 s or later.)
    _advance(clock, START + 610_000, step_s=5)
    assert wait_until(lambda: _fired_by(kafka_bootstrap, f"witness-{tag}", [START + 610_000]), 60)
    for job_id, slots in want.items():
        fired = _first_attempts(job_id)
        assert sorted(fired) == slots, (job_id, [format_utc(s) for s in fired])
        assert all(n == 1 for n in fired.values()), job_id
