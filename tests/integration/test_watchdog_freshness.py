"""`output_stale` against the real broker: the watchdog reads a job's output topic itself;
an output topic with nothing newer than `warnAfter` opens the alert, a new record there
resolves it — with no timer or worker running at all (the output is judged, not the runs)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.test_watchdog import env_for
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration


def test_a_stale_output_topic_opens_and_a_new_record_resolves(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    env.update(TICKWHEEL_WATCHDOG_FRESHNESS_EVERY_S="1")
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    output = topic_name("workflows.events")  # a declared topic nothing else writes here
    job = f"{applied_topology}report"
    try:
        watchdog.start()
        assert wait_until(lambda: "watchdog_restored" in watchdog.log_path.read_text(), 30)
        publish_jobs(kafka_bootstrap, [{
            "jobId": job, "type": "noop", "cron": "0 3 * * *", "expectedMaxInterval": "26h",
            "freshness": {"topic": output, "warnAfter": "4s"},
        }], int(time.time() * 1000))  # fmt: skip

        def state() -> str | None:
            found = [i for i in incidents(read_transitions(kafka_bootstrap))
                     if i["kind"] == "output_stale" and i["job_id"] == job]  # fmt: skip
            return found[0]["state"] if found else None

        assert wait_until(lambda: state() == "open", 30, 0.5)
        producer = EventProducer(kafka_bootstrap)

        def fresh_output_resolves() -> bool:
            # A record a second old at most whenever the watchdog looks: a loaded machine can
            # take longer than warnAfter to get there, and then one record is stale again.
            producer.send(output, "any", b"fresh output")
            producer.flush()
            return state() == "resolved"

        assert wait_until(fresh_output_resolves, 30, 1.0)
    finally:
        watchdog.stop()
    # The first incident; once the new record is itself 4 s old a second one may open.
    incident, *_ = [i for i in incidents(read_transitions(kafka_bootstrap))
                    if i["kind"] == "output_stale"]  # fmt: skip
    counts = Counter(t["transition"] for t in incident["transitions"])
    assert counts["opened"] == 1 and counts["resolved"] == 1, counts
    assert incident["evidence"]["reason"] == "fresh_output"
