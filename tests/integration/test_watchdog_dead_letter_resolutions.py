"""A dead letter an operator retried or discarded stops counting, on the real broker.

The watchdog runs in this process on a fake clock, reading the definitions, the execution
events and `executions.dlq.resolutions` from the broker; the assertions read the `alerts`
topic back. A retry runs as a new execution and a discard runs nothing (decision 0102), so
without the resolution the letter's dead-letter-age alert would stay open for ever.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.timer_harness import publish_jobs, wait_until
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.clock import FakeClock
from tickwheel.core.identity import execution_id
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.core.watchdog.thresholds import Thresholds
from tickwheel.events import execution_event
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.services.watchdog.service import WatchdogService
from tickwheel.services.watchdog.settings import WatchdogSettings
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

START = parse_iso_ms("2027-03-01T08:00:00Z", "start")
SLOT = START - 3_600_000
AGE_MS = 60_000


@pytest.fixture
def watchdog(kafka_bootstrap: str, applied_topology: str) -> Iterator[tuple[WatchdogService, FakeClock]]:  # fmt: skip
    clock = FakeClock(START / 1000)
    settings = WatchdogSettings(
        instance=f"wd-{uuid.uuid4().hex[:6]}", bootstrap=kafka_bootstrap, tick_ms=100,
        lateness_ms=1_000, audit=(0, 86_400_000, 50), lag_alert_ms=30 * 24 * 3_600_000,
        thresholds=Thresholds(dead_letter_age_ms=AGE_MS, resolve_after_ms=0),
    )  # fmt: skip
    service = WatchdogService(settings, clock=clock)
    runner = threading.Thread(target=service.run, name="watchdog", daemon=True)
    runner.start()
    try:
        yield service, clock
    finally:
        service.stop()
        runner.join(30)


def _letter(bootstrap: str, job_id: str) -> list[dict[str, Any]]:
    """The dead-letter-age incidents on this test's own `alerts` topic (its one job's)."""
    return [i for i in incidents(read_transitions(bootstrap)) if i["kind"] == "dead_letter_age"]


def test_a_discarded_dead_letter_resolves_its_age_alert(
    kafka_bootstrap: str, applied_topology: str, watchdog: tuple[WatchdogService, FakeClock]
) -> None:
    service, clock = watchdog
    job = f"{applied_topology}payout"
    publish_jobs(kafka_bootstrap, [{"jobId": job, "type": "noop", "cron": "0 9 * * *",
                                    "timezone": "UTC", "expectedMaxInterval": "1d"}], START)  # fmt: skip
    assert wait_until(lambda: job in service.state.facts.jobs, 60, 0.2)
    producer = EventProducer(kafka_bootstrap)
    request = {"job_id": job, "job_type": "noop", "tenant_id": "default",
               "execution_id": execution_id(job, 1, SLOT), "attempt": 3,
               "scheduled_time": SLOT, "fire_time": SLOT}  # fmt: skip
    dead = execution_event(request, "dead_lettered", event_id=f"{job}:dead",
                           event_time_ms=START + 1_000, worker_id="w1")  # fmt: skip
    producer.send(topic_name("executions.events"), job, encode("ExecutionEvent", dead))
    producer.flush()

    def evaluated_at(now_ms: int) -> bool:
        mark = service.state.watermark
        return mark is not None and mark >= now_ms - 1_000 - 1

    def advance_until(done: Any, seconds: int) -> None:
        now = int(clock.now() * 1000)
        for _ in range(seconds // 5):
            now += 5_000
            clock.set(now / 1000)
            assert wait_until(lambda n=now: evaluated_at(n), 30, 0.05), f"never evaluated at {now}"
            if done():
                return
        raise AssertionError(f"not done within {seconds} fake seconds")

    advance_until(lambda: any(i["state"] == "open" for i in _letter(kafka_bootstrap, job)), 180)
    resolution = {"resolution_id": str(uuid.uuid4()), "dead_letter_id": f"dlq:{job}",
                  "event_time": int(clock.now() * 1000), "action": "discarded",
                  "by": "ops@example.com", "note": "paid by hand", "job_id": job,
                  "execution_id": request["execution_id"], "tenant_id": "default"}  # fmt: skip
    producer.send(topic_name("executions.dlq.resolutions"), f"dlq:{job}",
                  encode("DeadLetterResolution", resolution))  # fmt: skip
    producer.flush()
    advance_until(lambda: all(i["state"] == "resolved" for i in _letter(kafka_bootstrap, job)), 120)
    [incident] = _letter(kafka_bootstrap, job)
    kinds = [t["transition"] for t in incident["transitions"]]
    assert kinds.count("opened") == 1 and kinds[-1] == "resolved", kinds
