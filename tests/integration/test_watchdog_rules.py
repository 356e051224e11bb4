"""The watchdog's newer rules against the real stack (timer, two workers, watchdog, CLI):
a bounded job past its end raises nothing, a run too short and a run too long open (the
long one resolves when its worker wakes and cancels it), and a job disabled past its review
date opens and is listed by `tickwheel jobs disabled`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_watchdog import env_for, restored, spec
from tests.integration.timer_harness import (
    ServiceProcess,
    execution_events,
    publish_jobs,
    wait_until,
)
from tickwheel.core.timefmt import format_utc
from tickwheel.sdk.alerts import incidents, read_transitions

pytestmark = pytest.mark.integration


def found_by(bootstrap: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for incident in incidents(read_transitions(bootstrap)):
        out.setdefault((incident["kind"], incident["job_id"]), []).append(incident)
    return out


@pytest.mark.chaos
def test_ended_short_long_and_disabled_jobs_against_the_real_stack(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    env.update(TICKWHEEL_WATCHDOG_RUN_GRACE_S="1")
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    normal = ServiceProcess("wn", tmp_path / "wn.log", env, "worker",
                            ("--concurrency", "4", "--priority", "normal"))  # fmt: skip
    high = ServiceProcess("wh", tmp_path / "wh.log", env, "worker",
                          ("--concurrency", "1", "--priority", "high"))  # fmt: skip
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    p = applied_topology
    ended, short, long_, off = f"{p}ended", f"{p}short", f"{p}long", f"{p}off"
    try:
        for process in (timer, normal, high, watchdog):
            process.start()
        # Jobs published before the timer owns its partitions would start late: overdue at
        # once, which is true but not what this test is about.
        assert wait_until(lambda: restored(timer.log_path), 30)
        now = int(time.time() * 1000)
        publish_jobs(kafka_bootstrap, [
            spec(ended, endAt=format_utc(now + 8_000)),
            spec(short, minRunTime="1s"),
            {"jobId": long_, "type": "sleep", "payload": {"seconds": 60}, "priority": "high",
             "runAt": format_utc(now + 3_000), "maxRunTime": "5s"},
            spec(off, enabled=False, disabledBy="ana", disabledOwner="team-billing",
                 disabledReason="vendor outage", disabledReviewBy=format_utc(now + 4_000)),
        ], now)  # fmt: skip

        def leased() -> bool:
            return any(e["job_id"] == long_ and e["event_type"] == "leased"
                       for e in execution_events(kafka_bootstrap))  # fmt: skip

        assert wait_until(leased, 30, 0.2)
        # Hung: no cancel at maxRunTime, no outcome; the lease (30 s) has not expired yet.
        high.signal(signal.SIGSTOP)
        assert wait_until(lambda: ("run_too_long", long_) in found_by(kafka_bootstrap), 20, 0.5)
        high.signal(signal.SIGCONT)

        def settled() -> bool:
            found = found_by(kafka_bootstrap)
            too_long = found.get(("run_too_long", long_), [])
            return (
                bool(too_long)
                and too_long[0]["state"] == "resolved"
                and ("run_too_short", short) in found
                and ("disabled_past_review", off) in found
                and int(time.time() * 1000) > now + 30_000
            )  # well past the ended job's end

        assert wait_until(settled, 60, 1.0), found_by(kafka_bootstrap)
        listed = subprocess.run([sys.executable, "-m", "tickwheel.cli", "jobs", "disabled",
                                 "--json"], env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert listed.returncode == 0, listed.stderr
    finally:
        for process in (watchdog, high, normal, timer):
            process.stop()
    found = found_by(kafka_bootstrap)
    assert not [k for k in found if k[1] == ended], found  # finished, not overdue nor broken
    assert set(found) == {("run_too_long", long_), ("run_too_short", short),
                          ("disabled_past_review", off)}, found  # fmt: skip
    for incidents_of in found.values():
        assert len(incidents_of) == 1, incidents_of  # one incident each, no flapping
        counts = Counter(t["transition"] for t in incidents_of[0]["transitions"])
        assert counts["opened"] == 1 and counts["resolved"] <= 1, counts
    [too_long] = found[("run_too_long", long_)]
    assert too_long["evidence"]["reason"] in ("run_finished",)  # the resolve's evidence
    [review] = found[("disabled_past_review", off)]
    assert review["state"] == "open" and review["evidence"]["owner"] == "team-billing"
    [report] = [j for j in json.loads(listed.stdout) if j["job_id"] == off]
    assert (report["owner"], report["reason"], report["by"]) == (
        "team-billing",
        "vendor outage",
        "ana",
    )
    assert report["review_by"] == now + 4_000  # epoch ms, as stored
