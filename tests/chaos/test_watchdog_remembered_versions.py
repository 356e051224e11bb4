"""A watchdog SIGKILLed and restarted after compaction of `jobs.definitions` folded a paused and
resumed weekly job into its newest version must not call the job overdue: the versions it kept
on `watchdog.state` still say it was resumed yesterday (decision 0190). Without them the
restart's replay (decision 0056) sees one enabled version, created a month ago, and opens
`job_overdue` for a job whose interval restarted a day ago.

Compaction is emulated as `test_watchdog_remembered_success` emulates retention: every record
of the definitions deleted up to the end (the broker refuses that on a compacted-only topic,
so the topic is made `compact,delete` for the deletion), then the newest version of each job
published again (what compaction leaves). The control is a weekly job created a month ago and never paused: its
incident opening shows that the restarted watchdog evaluated before the resumed job is judged.

A second test deletes the paused job and re-creates it under the same id, never paused: the
tombstone of its kept versions must keep a restarted watchdog from merging them into the new
job (and so from hiding that the new job is overdue).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.chaos.test_watchdog_remembered_success import (
    DAY_MS,
    WEEKLY,
    drop_every_record,
    overdue,
)
from tests.integration.test_watchdog import env_for
from tests.integration.timer_harness import ServiceProcess, wait_until
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.admin import admin_client
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.ports.kafka import latest_per_key
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.watchdog.remembered import VERSIONS_PREFIX
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def versions_of(job_id: str, created_ms: int, changes: list[tuple[bool, int]]) -> list[Any]:
    """The job's definition as created, then one version per (enabled, updatedAt)."""
    first = validate_job({"jobId": job_id, **WEEKLY}, created_ms)
    kept = [first]
    for version, (enabled, updated) in enumerate(changes, start=2):
        kept.append({**first, "version": version, "enabled": enabled, "updatedAt": updated})
    return kept


def publish(bootstrap: str, definitions: list[Any]) -> None:
    producer = EventProducer(bootstrap)
    for record in definitions:
        producer.send(topic_name("jobs.definitions"), record["jobId"],
                      encode("JobDefinition", record))  # fmt: skip
    producer.flush()


def compact(bootstrap: str, keep: list[Any]) -> None:
    """Leave the definitions topic holding `keep` only, as compaction would."""
    topic = topic_name("jobs.definitions")
    admin = admin_client(bootstrap)
    for policy in ("compact,delete", "compact"):
        if policy == "compact":
            drop_every_record(bootstrap, "jobs.definitions")
        entry = ConfigEntry("cleanup.policy", policy,
                            incremental_operation=AlterConfigOpType.SET)  # fmt: skip
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=60)
    publish(bootstrap, keep)


def kept_versions(bootstrap: str) -> set[str]:
    """The jobs with a `versions/` record on `watchdog.state`, as compaction leaves it."""
    latest = latest_per_key(read_to_end(topic_name("watchdog.state"), None, bootstrap))
    return {key[len(VERSIONS_PREFIX) :] for key in latest if key.startswith(VERSIONS_PREFIX)}


def test_a_restarted_watchdog_keeps_a_resume_the_definitions_compaction_dropped(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    first = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    second = ServiceProcess("wd", tmp_path / "wd2.log", env, "watchdog")
    resumed, control = f"{applied_topology}weekly-resumed", f"{applied_topology}weekly-never"
    now = int(time.time() * 1000)
    month_ago = now - 30 * DAY_MS
    # Paused 20 days ago, resumed a day ago: owed nothing until 9 days after the resume.
    versions = versions_of(resumed, month_ago, [(False, now - 20 * DAY_MS), (True, now - DAY_MS)])
    try:
        publish(kafka_bootstrap, versions)
        first.start()
        assert wait_until(lambda: resumed in kept_versions(kafka_bootstrap), 60, 1.0)
        first.kill()
        compact(kafka_bootstrap, versions[-1:])
        second.start()
        assert wait_until(lambda: "watchdog_restored" in second.log_path.read_text(), 30)
        publish(kafka_bootstrap, versions_of(control, month_ago, []))
        assert wait_until(lambda: overdue(kafka_bootstrap, control), 60, 1.0)
        time.sleep(2)  # a few more ticks (500 ms) of the restarted watchdog
        assert second.process is not None and second.process.poll() is None
    finally:
        second.stop()
        first.stop()
    assert not overdue(kafka_bootstrap, resumed), incidents(read_transitions(kafka_bootstrap))


def test_a_deleted_jobs_kept_versions_are_not_merged_into_its_re_creation(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    # The paused and resumed job is deleted: its `versions/` record is tombstoned. Re-created
    # under the same id a month back and never paused, it is owed a success since then. Had
    # the restore kept the old versions (no tombstone, or folded in log order past it), their
    # version 3, resumed a day ago, would stand for the new job's resume and hide the overdue.
    env = env_for(kafka_bootstrap, applied_topology)
    first = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    second = ServiceProcess("wd", tmp_path / "wd2.log", env, "watchdog")
    job = f"{applied_topology}weekly-recreated"
    now = int(time.time() * 1000)
    month_ago = now - 30 * DAY_MS
    versions = versions_of(job, month_ago, [(False, now - 20 * DAY_MS), (True, now - DAY_MS)])
    try:
        publish(kafka_bootstrap, versions)
        first.start()
        assert wait_until(lambda: job in kept_versions(kafka_bootstrap), 60, 1.0)
        tombstone = EventProducer(kafka_bootstrap)
        tombstone.send(topic_name("jobs.definitions"), job, None)
        tombstone.flush()
        assert wait_until(lambda: job not in kept_versions(kafka_bootstrap), 60, 1.0)
        first.kill()
        compact(kafka_bootstrap, versions_of(job, month_ago, []))  # the re-creation alone
        second.start()
        assert wait_until(lambda: overdue(kafka_bootstrap, job), 60, 1.0), incidents(
            read_transitions(kafka_bootstrap)
        )
        assert second.process is not None and second.process.poll() is None
    finally:
        second.stop()
        first.stop()
