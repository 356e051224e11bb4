"""What the history sink's tests import, from where it lives: the known history and its
answers (`history_scenario.py`), running the sink and waiting for it (`history_sink_running.py`),
and `tickwheel history ...` in this process (`history_cli.py`)."""

from __future__ import annotations

from tests.integration.history_cli import run_cli
from tests.integration.history_scenario import (
    AS_OF,
    DAY,
    EPOCH,
    GARBAGE,
    MIN,
    PRIORITY,
    T0,
    T1,
    UNSTORABLE_ID,
    UTC,
    WINDOW,
    Job,
    Scenario,
    build_scenario,
    documented_answers,
    iso,
    ms,
)
from tests.integration.history_sink_running import (
    SinkProcess,
    group_caught_up,
    sink_in_thread,
    sink_topics,
    wait_caught_up,
)

__all__ = [
    "AS_OF", "DAY", "EPOCH", "GARBAGE", "MIN", "PRIORITY", "T0", "T1", "UNSTORABLE_ID", "UTC",
    "WINDOW", "Job", "Scenario", "SinkProcess", "build_scenario", "documented_answers",
    "group_caught_up", "iso", "ms", "run_cli", "sink_in_thread", "sink_topics", "wait_caught_up",
]  # fmt: skip
