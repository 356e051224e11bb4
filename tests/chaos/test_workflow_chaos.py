"""Chaos: SIGKILL the orchestrator, and separately the timer, repeatedly while 200 workflow
instances run, then check what the topics hold.

Invariants (issue 11, "Done means"): every instance ends (terminal); every step attempt
was requested once and has exactly one accepted outcome (the timer's input to the workflow);
no completed step is scheduled again; `workflows.events` has no duplicate
`(workflow_id, seq)` and no gap.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    CHAOS_DEFINITION,
    WorkflowStack,
    all_ended,
    check_workflow_invariants,
    start_instances,
    status_of,
    workflow_env,
    workflow_events,
)
from tickwheel.core.workflow import TERMINAL
from tickwheel.sdk.workflows import WorkflowsClient

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
INSTANCES = 200
KILLS = 4
# Instances start in one wave per kill, and each sleeps longer than the gap between kills:
# every kill lands while a wave is mid-run.
KILL_EVERY_S = 2.0
SETTLE_S = 240.0


def _run_with_kills(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path, victim: str
) -> None:
    env = workflow_env(kafka_bootstrap, applied_topology)
    stack: Any = WorkflowStack(tmp_path, env).start()
    try:
        WorkflowsClient(kafka_bootstrap).define(CHAOS_DEFINITION)
        ids: list[str] = []
        unfinished_at_kills = []
        for kill in range(KILLS):
            ids += start_instances(kafka_bootstrap, INSTANCES // KILLS, first=len(ids))
            time.sleep(KILL_EVERY_S)
            events = workflow_events(kafka_bootstrap)
            unfinished_at_kills.append(
                sum(status_of(events.get(i, [])) not in TERMINAL for i in ids)
            )
            process = stack.processes[victim]
            process.kill()
            # The heir has the same name: static membership hands it the same partitions.
            process.log_path = tmp_path / f"{victim}-{kill + 1}.log"
            process.start()
        print(f"{victim}: instances unfinished at each kill: {unfinished_at_kills}")
        # The kills landed while instances ran (else this test would prove nothing).
        assert all(n > 0 for n in unfinished_at_kills), unfinished_at_kills
        assert len(ids) == INSTANCES
        assert wait_until(lambda: all_ended(kafka_bootstrap, ids), SETTLE_S, interval=2.0)
        check_workflow_invariants(kafka_bootstrap, ids)
    finally:
        stack.stop()


def test_killing_the_orchestrator_repeatedly_loses_and_repeats_nothing(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    _run_with_kills(kafka_bootstrap, applied_topology, tmp_path, "orchestrator")


def test_killing_the_timer_repeatedly_loses_and_repeats_nothing(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    _run_with_kills(kafka_bootstrap, applied_topology, tmp_path, "timer")
