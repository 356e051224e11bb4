"""A restore that fails, or takes long, holds up its own partition only (issue 16, B7): the
failed one is tried again, and the other partitions keep firing on time meanwhile. The timer
runs in this process (its restore wrapped to fail once, then to be slow) against the real broker.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from tests.chaos.test_timer_bad_records import _canaries
from tests.integration.timer_harness import emitted_requests, publish_jobs, wait_until
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic as declared_topic

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

SLOW_RESTORE_S = 8.0


def test_a_failing_then_slow_restore_holds_up_only_its_own_partition(
    kafka_bootstrap: str, applied_topology: str
) -> None:
    tag = uuid.uuid4().hex[:6]
    records = publish_jobs(kafka_bootstrap, _canaries(tag), int(time.time() * 1000))
    partitions = declared_topic("jobs.definitions").partitions
    by_partition = {partition_for(r["jobId"], partitions): r["jobId"] for r in records}
    victim = by_partition[0]
    service = TimerService(
        TimerSettings(instance=f"t-{tag}", group_id=f"g-{uuid.uuid4()}", tick_ms=50)
    )
    restore = service.restorer.restore
    calls: Counter[int] = Counter()
    slow_window: list[float] = []

    def flaky(partition: int) -> Any:
        calls[partition] += 1
        if partition == 0 and calls[0] == 1:
            raise RuntimeError("a broker hiccup during the restore")
        if partition == 0 and calls[0] == 2:
            slow_window.append(time.time())
            time.sleep(SLOW_RESTORE_S)  # a restore of a million jobs
            slow_window.append(time.time())
        return restore(partition)

    service.restorer.restore = flaky  # type: ignore[method-assign]
    runner = threading.Thread(target=service.run, name="timer", daemon=True)
    runner.start()
    try:

        def victim_fired() -> bool:
            return any(r["job_id"] == victim for r in emitted_requests(kafka_bootstrap))

        assert wait_until(victim_fired, 60), "the failed partition was never restored"

        def window_emitted() -> bool:
            # Every other job has fired past the slow restore's window, so the window is whole.
            latest: dict[str, float] = {}
            for r in emitted_requests(kafka_bootstrap):
                latest[r["job_id"]] = max(latest.get(r["job_id"], 0), r["requested_at"] / 1000)
            others = [j for p, j in by_partition.items() if p != 0]
            # (The slow restore may still be running when the victim's first slot is read.)
            return len(slow_window) == 2 and all(
                latest.get(j, 0) > slow_window[-1] + 2 for j in others
            )

        assert wait_until(window_emitted, 30)
    finally:
        service.stop()
        runner.join(30)
    assert calls[0] >= 2 and len(slow_window) == 2, (calls, slow_window)
    start, end = slow_window
    requests = emitted_requests(kafka_bootstrap)
    for job_id in (j for p, j in by_partition.items() if p != 0):
        emitted = sorted(r["requested_at"] / 1000 for r in requests if r["job_id"] == job_id)
        during = [t for t in emitted if start - 2 <= t <= end + 2]
        gaps = [b - a for a, b in itertools.pairwise(during)]
        # An every-two-seconds job kept its pace while partition 0 restored.
        assert len(during) >= SLOW_RESTORE_S / 2 and max(gaps) < 4.5, (job_id, gaps)
