"""`Resize` against the real broker, without the fault: what it moves and where, that a run
stopped part-way leaves the cluster refused to services until a second run finishes it, and
that a finished resize is the count services take (decision 0211)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.timer_harness import (
    ServiceProcess,
    every_job_reached,
    publish_jobs,
    timer_env,
    wait_until,
)
from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.placement import is_partition_record, owner_partition
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.adapters.kafka.topology_changes import read_changes
from tickwheel.errors import InvalidInput, TopologyMismatch
from tickwheel.services.resize import Resize
from tickwheel.topology import JOBS_GROUP, group_partitions, topic_name

pytestmark = pytest.mark.integration

JOBS = 200


def _now_ms() -> int:
    return int(time.time() * 1000)


def _live(bootstrap: str, topic: str) -> dict[tuple[int, str], bytes]:
    latest: dict[tuple[int, str], bytes | None] = {}
    for record in read_to_end(topic_name(topic), None, bootstrap):
        if record.key is not None:
            latest[(record.partition, record.key)] = record.value
    return {k: v for k, v in latest.items() if v is not None and not is_partition_record(k[1])}


def test_a_resize_stopped_part_way_is_refused_to_services_and_finished_by_a_second_run(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = kafka_bootstrap
    env = timer_env(bootstrap, applied_topology)
    created = _now_ms()
    specs = [{"jobId": f"mv-{i:03d}", "type": "noop", "cron": "*/2 * * * * *"} for i in range(JOBS)]
    job_ids = [j["jobId"] for j in publish_jobs(bootstrap, specs, created)]
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    timer.start()
    try:
        assert wait_until(lambda: every_job_reached(bootstrap, job_ids, created + 4000), 90, 1)
    finally:
        timer.stop()
    before_states = {key for _, key in _live(bootstrap, "timers.state")}
    assert set(job_ids) <= before_states

    said: list[str] = []
    real_move = Resize._move_partition

    def move_two(self: Resize, partition: int, old: int) -> None:
        if partition == 2:
            raise KeyboardInterrupt("stopped part-way")
        real_move(self, partition, old)

    monkeypatch.setattr(Resize, "_move_partition", move_two)
    with pytest.raises(KeyboardInterrupt):
        Resize(bootstrap, 12, now_ms=_now_ms, say=said.append).run()
    assert read_changes(bootstrap)[JOBS_GROUP]["state"] == "resizing"
    with pytest.raises(TopologyMismatch, match="being resized from 6 to 12"):
        verify_topology(bootstrap=bootstrap)
    with pytest.raises(InvalidInput, match="a resize to 12 is under way"):
        Resize(bootstrap, 24, now_ms=_now_ms, say=said.append).run()

    monkeypatch.setattr(Resize, "_move_partition", real_move)
    report = Resize(bootstrap, 12, now_ms=_now_ms, say=said.append).run()
    assert report.old == 6 and report.new == 12 and report.moved > 0
    assert any("resuming" in line for line in said), said
    assert group_partitions(verify_topology(bootstrap=bootstrap)) == 12

    for topic in ("jobs.definitions", "timers.state"):
        live = _live(bootstrap, topic)
        stray = [(p, k) for p, k in live if owner_partition(k, 12) != p]
        assert not stray, (topic, stray[:3])
        keys = [k for _, k in live]
        assert sorted(keys) == sorted(set(keys)), topic
        assert set(job_ids) <= set(keys), topic
        assert any(p >= 6 for p, _ in live), topic
    # Every partition the resize added has a checkpoint to read its inputs from.
    checkpoints = {
        r.partition
        for r in read_to_end(topic_name("timers.state"), None, bootstrap)
        if r.key == f"__partition__/{r.partition}"
    }
    assert set(range(6, 12)) <= checkpoints

    again = Resize(bootstrap, 12, now_ms=_now_ms, say=said.append).run()
    assert again.already_done and again.moved == 0
    with pytest.raises(InvalidInput, match="fewer than the 12"):
        Resize(bootstrap, 8, now_ms=_now_ms, say=said.append).run()
