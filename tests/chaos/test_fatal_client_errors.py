"""A fatal client error on the real broker, the one the issue-31 timers met: a static group
member fenced by another member with its `group.instance.id`. librdkafka gives it to the fenced
consumer as a fatal error; a loop that skipped message errors sat still, holding no partition,
for good. Now the process ends with the restart code (decision 0200), and once restarted, as its
supervisor restarts it, every expected slot fires exactly once.

The fault is injected here, deterministically, by an interloper joining the service's group
under the service's own instance id; the broker kill that caused it in the wild is in
`tests/cluster/`."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.timer_harness import (
    ServiceProcess,
    emitted_requests,
    every_job_reached,
    occurrence_counts,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.adapters.kafka.client import Consumer, FatalClientError
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.fatal import FATAL_CLIENT_EXIT_CODE
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

JOBS = 30
EXIT_BOUND_S = 45.0  # the fence reaches the member at its next heartbeat (1 s) or fetch


def fence_static_member(bootstrap: str, group: str, instance_id: str, topic: str) -> None:
    """Join `group` as `instance_id`: the broker replaces the member of that id, which learns
    it was fenced at its next request. The interloper then leaves."""
    settings = {"group.instance.id": instance_id, "session.timeout.ms": 10000}
    interloper = Consumer(consumer_config(group, bootstrap, **settings))
    try:
        interloper.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not interloper.assignment():
            interloper.poll(0.2)
    except FatalClientError:
        pass  # fenced back by the service's own rejoin: the service was fenced first
    finally:
        interloper.close()


def _wait_exit(process: ServiceProcess, bound_s: float) -> int | None:
    assert process.process is not None
    try:
        return process.process.wait(bound_s)
    except Exception:
        return None


def _expected(created_ms: int, until_ms: int) -> list[int]:
    first = (created_ms // 2000 + 1) * 2000
    return list(range(first, until_ms + 1, 2000))


def test_a_fenced_static_timer_exits_and_once_restarted_fires_every_slot_once(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    group = f"g-{uuid.uuid4()}"
    env = timer_env(kafka_bootstrap, applied_topology, TICKWHEEL_TIMER_GROUP=group)
    timer = ServiceProcess("timer-a", tmp_path / "timer.log", env)
    specs = [
        {"jobId": f"fenced-{i:03d}", "type": "noop", "cron": "*/2 * * * * *", "jitter": "0s"}
        for i in range(JOBS)
    ]
    records = publish_jobs(kafka_bootstrap, specs, int(time.time() * 1000))
    created_ms = max(r["createdAt"] for r in records)
    job_ids = [r["jobId"] for r in records]
    timer.start()
    try:
        assert wait_until(lambda: len(emitted_requests(kafka_bootstrap)) >= JOBS, 90)
        fence_static_member(
            kafka_bootstrap, group, f"{group}-timer-a", topic_name("jobs.definitions")
        )
        code = _wait_exit(timer, EXIT_BOUND_S)
        log = (tmp_path / "timer.log").read_text()
        assert code == FATAL_CLIENT_EXIT_CODE, (
            f"the fenced timer did not end with the restart code within {EXIT_BOUND_S}s "
            f"(exit {code}); its log's tail:\n{log[-2000:]}"
        )
        assert "timer_client_fatal" in log
        # What its supervisor does: start it again, same instance name.
        timer.start()
        until_ms = int(time.time() * 1000) + 6000
        assert wait_until(
            lambda: every_job_reached(kafka_bootstrap, job_ids, until_ms + 2000), 120, 2
        ), "the restarted timer did not fire every job again"
    finally:
        timer.stop()
    counts = occurrence_counts(emitted_requests(kafka_bootstrap))
    duplicates = [k for k, n in counts.items() if n > 1]
    assert not duplicates, duplicates[:5]
    expected = {(job, slot) for job in job_ids for slot in _expected(created_ms, until_ms)}
    missing = expected - set(counts)
    assert not missing, f"{len(missing)} slots never fired, e.g. {sorted(missing)[:5]}"


# The other services in a group with static membership: (service, group variable, the topic
# the group reads, the log action that says it serves).
STATIC_MEMBERS = [
    ("orchestrator", "TICKWHEEL_ORCHESTRATOR_GROUP", "workflows.inputs", "partition_restored"),
    ("jobwriter", "TICKWHEEL_JOBWRITER_GROUP", "jobs.commands", "partition_restored"),
    ("history", "TICKWHEEL_HISTORY_GROUP", "executions.events", "history_sink_started"),
]


@pytest.mark.parametrize(
    ("service", "group_var", "topic", "serving"), STATIC_MEMBERS, ids=[m[0] for m in STATIC_MEMBERS]
)
def test_every_static_member_service_ends_on_its_fence_for_its_supervisor_to_restart(
    kafka_bootstrap: str,
    applied_topology: str,
    tmp_path: Path,
    service: str,
    group_var: str,
    topic: str,
    serving: str,
) -> None:
    group = f"g-{uuid.uuid4()}"
    env = timer_env(
        kafka_bootstrap,
        applied_topology,
        **{group_var: group},
        TICKWHEEL_HOME=str(tmp_path / "home"),
    )
    log_path = tmp_path / f"{service}.log"
    process = ServiceProcess(service, log_path, env, service)
    process.start()
    try:
        assert wait_until(lambda: serving in log_path.read_text(), 90), log_path.read_text()
        fence_static_member(kafka_bootstrap, group, f"{group}-{service}", topic_name(topic))
        code = _wait_exit(process, EXIT_BOUND_S)
        log = log_path.read_text()
        assert code == FATAL_CLIENT_EXIT_CODE, f"exit {code}; the log's tail:\n{log[-2000:]}"
        assert '_client_fatal", "error": "Fatal' in log, log[-2000:]
    finally:
        process.stop()


INJECTION = Path(__file__).parent / "fatal_injection"
# Every service process, how it says it serves, and the codes it may end with on a fatal
# client error: the restart code through `serve`; the worker also its own graceful failure
# (its lanes stop, running handlers finish within the grace) with code 1, when a lane meets
# the error before its cancellation listener's thread does.
RESTART = {FATAL_CLIENT_EXIT_CODE}
EVERY_SERVICE = [
    ("timer", (), "partition_restored", RESTART),
    ("worker", ("--concurrency", "2"), "worker_started", {FATAL_CLIENT_EXIT_CODE, 1}),
    ("orchestrator", (), "partition_restored", RESTART),
    ("jobwriter", (), "partition_restored", RESTART),
    ("history", (), "history_sink_started", RESTART),
    ("watchdog", (), "watchdog_started", RESTART),
]


def _inject(
    tmp_path: Path, bootstrap: str, prefix: str, service: str, args: tuple[str, ...], kind: str
) -> tuple[ServiceProcess, Path]:
    env = timer_env(
        bootstrap,
        prefix,
        TICKWHEEL_HOME=str(tmp_path / "home"),
        TICKWHEEL_TEST_FATAL=kind,
        TICKWHEEL_TEST_FATAL_AFTER_S="10",
        PYTHONPATH=os.pathsep.join([str(INJECTION), os.environ.get("PYTHONPATH", "")]),
    )
    log_path = tmp_path / f"{service}.log"
    process = ServiceProcess(service, log_path, env, service, args)
    process.start()
    return process, log_path


@pytest.mark.parametrize(
    ("service", "args", "serving", "codes"), EVERY_SERVICE, ids=[s[0] for s in EVERY_SERVICE]
)
def test_a_fatal_consumer_error_ends_every_service_for_its_supervisor_to_restart(
    kafka_bootstrap: str,
    applied_topology: str,
    tmp_path: Path,
    service: str,
    args: tuple[str, ...],
    serving: str,
    codes: set[int],
) -> None:
    process, log_path = _inject(
        tmp_path, kafka_bootstrap, applied_topology, service, args, "consumer"
    )
    try:
        assert wait_until(lambda: serving in log_path.read_text(), 60), log_path.read_text()
        ended = _wait_exit(process, EXIT_BOUND_S)
        log = log_path.read_text()
        assert ended in codes, f"exit {ended}; the log's tail:\n{log[-2000:]}"
        assert "injected by the test" in log, log[-2000:]
    finally:
        process.stop()


def test_a_fatal_producer_error_ends_the_worker_that_publishes_with_it(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    """The worker's leases, heartbeats and outcomes go through an event producer, whose
    deliveries a thread serves all the time: once the producer is dead no outcome could be
    delivered, so the worker ends and is restarted (its leases run out and the timer re-issues
    what was unfinished)."""
    process, log_path = _inject(
        tmp_path, kafka_bootstrap, applied_topology, "worker", ("--concurrency", "2"), "producer"
    )
    try:
        assert wait_until(lambda: "worker_started" in log_path.read_text(), 60)
        ended = _wait_exit(process, EXIT_BOUND_S)
        log = log_path.read_text()
        assert ended == FATAL_CLIENT_EXIT_CODE, f"exit {ended}; the log's tail:\n{log[-2000:]}"
        assert "injected by the test" in log, log[-2000:]
    finally:
        process.stop()
