"""The watchdog follows the holiday calendars on the real broker (decision 0107).

The watchdog service runs in this process on a fake clock (days pass in seconds), reading the
`calendars` topic, the definitions and the execution events from the broker and writing its
alerts there; the assertions read the `alerts` topic back. Two business-day jobs run alike —
09:00 on weekdays, held to 3d1h, run every day the bank works — one following the `bank`
calendar (Friday 2027-01-29 a holiday), one following `plain` (no holidays): across the
holiday the first raises nothing, the second is overdue for the Friday it was owed.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from tests.integration.timer_harness import publish_jobs, wait_until
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.clock import FakeClock
from tickwheel.core.identity import execution_id
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.events import execution_event
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.sdk.calendars import put_calendar
from tickwheel.services.watchdog.service import WatchdogService
from tickwheel.services.watchdog.settings import WatchdogSettings

pytestmark = pytest.mark.integration

START = parse_iso_ms("2027-01-27T00:00:00Z", "start")  # a Wednesday
HOUR = 3_600_000
# The bank's business days at 09:00 from START: Friday the 29th is its holiday.
BANK_SLOTS = [parse_iso_ms(f"{day}T09:00:00Z", "slot")
              for day in ("2027-01-27", "2027-01-28", "2027-02-01", "2027-02-02")]  # fmt: skip
END = parse_iso_ms("2027-02-02T12:00:00Z", "end")


@pytest.fixture
def watchdog(kafka_bootstrap: str, applied_topology: str) -> Iterator[tuple[WatchdogService, FakeClock]]:  # fmt: skip
    clock = FakeClock(START / 1000)
    settings = WatchdogSettings(
        instance=f"wd-{uuid.uuid4().hex[:6]}", bootstrap=kafka_bootstrap, tick_ms=100,
        lateness_ms=1_000, audit=(0, 86_400_000, 50),
        lag_alert_ms=30 * 24 * HOUR,  # fake days pass while a record is in flight: not lag
    )  # fmt: skip
    service = WatchdogService(settings, clock=clock)
    runner = threading.Thread(target=service.run, name="watchdog", daemon=True)
    runner.start()
    try:
        yield service, clock
    finally:
        service.stop()
        runner.join(30)


def succeeded(producer: EventProducer, topic: str, job_id: str, slot: int) -> None:
    """What a worker writes for a slot that ran at 09:00 and took a second."""
    request = {"job_id": job_id, "job_type": "noop", "tenant_id": "default",
               "execution_id": execution_id(job_id, 1, slot), "attempt": 1,
               "scheduled_time": slot, "fire_time": slot}  # fmt: skip
    for kind, at in (("leased", slot + 100), ("succeeded", slot + 1_000)):
        event = execution_event(request, kind, event_id=f"{job_id}:{slot}:{kind}",
                                event_time_ms=at, worker_id="w1")  # fmt: skip
        producer.send(topic, job_id, encode("ExecutionEvent", event))


def test_a_business_day_job_across_a_bank_holiday_raises_nothing(
    kafka_bootstrap: str, applied_topology: str, watchdog: tuple[WatchdogService, FakeClock]
) -> None:
    from tickwheel.topology import topic_name

    service, clock = watchdog
    put_calendar("bank", ["2027-01-29"], bootstrap=kafka_bootstrap)
    put_calendar("plain", [], bootstrap=kafka_bootstrap)
    pay, ctl = f"{applied_topology}pay", f"{applied_topology}ctl"
    publish_jobs(kafka_bootstrap, [
        {"jobId": job, "type": "noop", "cron": "0 9 * * *", "timezone": "UTC", "jitter": "0s",
         "expectedMaxInterval": "3d1h", "businessDays": "skip", "calendar": calendar}
        for job, calendar in ((pay, "bank"), (ctl, "plain"))
    ], START)  # fmt: skip
    assert wait_until(lambda: "bank" in service.state.facts.calendars
                      and ctl in service.state.facts.jobs, 60, 0.2)  # fmt: skip
    producer = EventProducer(kafka_bootstrap)
    events_topic = topic_name("executions.events")
    slots = list(BANK_SLOTS)

    def evaluated_at(now_ms: int) -> bool:
        mark = service.state.watermark
        return mark is not None and mark >= now_ms - 1_000 - 1

    # Hour by hour in fake time; each slot of the bank's days runs for both jobs.
    now = START
    for _ in range((END - START) // HOUR):
        now += HOUR
        while slots and slots[0] + 1_000 <= now:
            slot = slots.pop(0)
            for job in (pay, ctl):
                succeeded(producer, events_topic, job, slot)
            producer.flush()
            assert wait_until(lambda s=slot: service.state.facts.jobs[pay].last_success_slot == s
                              and service.state.facts.jobs[ctl].last_success_slot == s, 30, 0.05)  # fmt: skip
        clock.set(now / 1000)
        assert wait_until(lambda n=now: evaluated_at(n), 30, 0.05), f"never evaluated at {now}"
    found = [i for i in incidents(read_transitions(kafka_bootstrap)) if i["job_id"] in (pay, ctl)]
    # The plain calendar's Friday was owed and never ran: overdue from Sunday 10:00
    # (Thursday's success + 3d1h), resolved by Monday's success. The bank owed no Friday.
    assert [(i["job_id"], i["kind"]) for i in found] == [(ctl, "job_overdue")], found
    transitions = [t["transition"] for t in found[0]["transitions"]]
    assert transitions[0] == "opened" and transitions.count("opened") == 1, transitions
    assert found[0]["opened_at"] >= parse_iso_ms("2027-01-31T10:00:01Z", "deadline")
    assert found[0]["state"] == "resolved"
