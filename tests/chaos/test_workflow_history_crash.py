"""Chaos: SIGKILL the history sink between a ClickHouse insert and its Kafka offset commit
while it records real workflow runs; restarted, it holds every workflow event once and every
workflow answer is the one an undisturbed sink gives.

The run and the undisturbed sink are `test_workflow_history_run.recorded`; this module
starts its own copy of it.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_sink_running import SinkProcess
from tests.integration.test_workflow_history_run import (
    TIMEOUT_S,
    Recorded,
    recorded,
    recorded_ids,
    saga_answers,
    topic_ids,
)
from tests.integration.timer_harness import wait_until
from tickwheel.history import open_workflow_steps, workflow_timeline

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(400)]
__all__ = ["recorded"]  # the module fixture, used here under its own name


def _answers(reader: Any, recorded: Recorded) -> dict[str, Any]:
    as_of = max(e["event_time"] for v in recorded.events.values() for e in v) + 60_000
    return {
        **saga_answers(reader),
        "open": open_workflow_steps(reader, as_of).rows,
        "timelines": {i: workflow_timeline(reader, i) for i in sorted(recorded.events)},
    }


def test_sigkill_between_insert_and_commit_changes_no_workflow_answer(
    recorded: Recorded, tmp_path: Path
) -> None:
    # A sink process killed right after its second insert, before committing it, restarted
    # with another batch size: that batch comes back cut differently (new dedup tokens).
    expected = _answers(recorded.reader, recorded)
    crashing = SinkProcess(tmp_path / "history", f"wfh-crash-{uuid.uuid4().hex[:8]}",
                           tmp_path / "sink.log", {"TICKWHEEL_HISTORY_BATCH_MS": "50"})  # fmt: skip
    try:
        crashing.start(TICKWHEEL_HISTORY_MAX_BATCH="10", TICKWHEEL_HISTORY_CRASH_AFTER_INSERT="2")
        assert crashing.wait_exit(120) == -signal.SIGKILL, crashing.log()
        crashing.start(TICKWHEEL_HISTORY_MAX_BATCH="7")
        reader = crashing.reader()
        try:
            wanted = topic_ids(recorded.events)
            assert wait_until(lambda: set(recorded_ids(reader)) >= wanted, TIMEOUT_S)
            counted = recorded_ids(reader)
            assert set(counted) == wanted and set(counted.values()) == {1}
            assert _answers(reader, recorded) == expected
        finally:
            reader.close()
    finally:
        crashing.stop()
