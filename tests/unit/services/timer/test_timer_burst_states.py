"""A burst's transactions carry requests only: the states of the jobs that fired follow once
no partition of the instance bursts any more (decision 0184), and then every one is written.

On the in-memory Kafka, one loop turn at a time (`TimerService.step`, the real `_tick_all`):
a batch of ten a tick, so the partitions (of unequal sizes, as the hash places the jobs) end
their bursts in different turns; the ones done first must not write states while the others
still fire."""

from __future__ import annotations

from collections import Counter

from tests.unit.services.timer.test_timer_service_memory import (
    GROUP,
    MAX_TURNS,
    MINUTE_MS,
    PARTITIONS,
    T0_MS,
    Cluster,
)
from tickwheel.adapters.avro import decode, encode
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic_name

JOBS = 240
BATCH = 10


def _states_by_job(cluster: Cluster) -> Counter[str]:
    """How many committed job states (not checkpoints) each job has."""
    states: Counter[str] = Counter()
    for record in cluster.reader.read_to_end(topic_name("timers.state")):
        if record.key is not None and not record.key.startswith("__partition__"):
            states[record.key] += 1
    return states


def test_no_state_is_written_while_any_partition_still_bursts_and_all_are_written_after() -> None:
    cluster = Cluster()
    jobs = [f"burst-job-{i}" for i in range(JOBS)]
    for job in jobs:  # due at the first whole minute after T0, every hour
        spec = {"jobId": job, "type": "noop", "cron": "1 * * * *", "jitter": "0s"}
        cluster.publish(job, encode("JobDefinition", validate_job(spec, cluster.now_ms())))
    settings = TimerSettings(instance="a", bootstrap="memory", group_id=GROUP, tick_ms=50,
                             metrics_port=0, max_batch=BATCH)  # fmt: skip
    timer = TimerService(settings, clock=cluster.clock, clients=cluster.clients, inline=True)
    timer.start()
    cluster.until_served([timer], {"a": PARTITIONS})
    cluster.clock.advance((T0_MS + MINUTE_MS - cluster.now_ms()) / 1000 - 0.1)
    assert not _states_by_job(cluster), "nothing fired yet"

    burst_turns = 0
    for _ in range(MAX_TURNS):
        cluster.turns([timer], 1)
        fired = len(cluster.requests())
        if fired == JOBS:
            break
        burst_turns += fired > 0
        assert not _states_by_job(cluster), f"a state written mid-burst ({fired} of {JOBS} fired)"
    assert len(cluster.requests()) == JOBS
    # Unequal partitions: some end their bursts turns before the others (what is tested).
    assert burst_turns >= JOBS // PARTITIONS // BATCH

    for _ in range(MAX_TURNS):
        if len(_states_by_job(cluster)) == JOBS:
            break
        cluster.turns([timer], 1)
    states = _states_by_job(cluster)
    assert set(states) == set(jobs), f"{JOBS - len(states)} states never written"
    requests = cluster.requests()
    assert len(requests) == JOBS, "no job fired twice meanwhile"
    assert {r["job_id"] for r in requests} == set(jobs)
    for record in cluster.reader.read_to_end(topic_name("timers.state")):
        if record.key in states and record.value is not None:
            assert decode(record.value, "TimerState")[1]["last_scheduled_time"] is not None
