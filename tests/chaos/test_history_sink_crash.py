"""Chaos: SIGKILL the history sink between a ClickHouse insert and its Kafka offset commit,
restart it, and every documented answer is the same as a run that never crashed.

Two real sink processes read the same published history into two chDB directories under two
consumer groups. The reference runs undisturbed. The other is killed by its test hook right
after its second insert, before committing it, so that batch is delivered again; it restarts
with a different batch size, so the redelivered records arrive cut into other batches (new
deduplication tokens) and duplicate rows really land — the ReplacingMergeTree + FINAL /
uniqExact rule, not the token, must then keep the answers right.
"""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_cli import run_cli
from tests.integration.history_scenario import build_scenario, documented_answers
from tests.integration.history_sink_running import SinkProcess, wait_caught_up
from tickwheel.adapters.clickhouse import ChdbHistoryStore, HistorySettings
from tickwheel.history import open_history_reader, read_owner

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(240)]

TABLES = (
    "execution_events", "execution_requests", "job_definitions", "dead_letters",
    "workflow_events", "alerts",
)  # fmt: skip


def duplicate_rows(reader: Any) -> int:
    """Physical rows beyond one per event_id, over every table (no FINAL)."""
    total = 0
    for table in TABLES:
        raw, distinct = reader.query(f"SELECT count(), uniqExact(event_id) FROM {table}").rows[0]
        total += raw - distinct
    return int(total)


def test_sigkill_between_insert_and_commit_changes_no_documented_answer(
    applied_topology: str, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)  # embedded on purpose
    scenario = build_scenario()
    scenario.publish(kafka_bootstrap)

    reference = SinkProcess(
        tmp_path / "reference", f"reference-{uuid.uuid4().hex[:8]}", tmp_path / "reference.log",
        {"TICKWHEEL_HISTORY_MAX_BATCH": "20"},
    )  # fmt: skip
    crashing = SinkProcess(
        tmp_path / "crashing", f"crashing-{uuid.uuid4().hex[:8]}", tmp_path / "crashing.log",
        {"TICKWHEEL_HISTORY_BATCH_MS": "50"},
    )  # fmt: skip
    try:
        reference.start()
        reader = reference.reader()
        wait_caught_up(kafka_bootstrap, reference.group)
        expected = documented_answers(reader, scenario)
        reference.stop()

        crashing.start(TICKWHEEL_HISTORY_MAX_BATCH="20", TICKWHEEL_HISTORY_CRASH_AFTER_INSERT="2")
        assert crashing.wait_exit(90) == -signal.SIGKILL, crashing.log()
        assert "history_test_crash" in crashing.log()
        # owner.json still names the dead process: a reader sees it is stale and opens the
        # directory itself (nobody holds it now), then lets go before the sink restarts.
        assert read_owner(crashing.history_dir) is not None
        stale = open_history_reader(HistorySettings(history_dir=crashing.history_dir), wait_s=0)
        try:
            assert isinstance(stale, ChdbHistoryStore)
            assert stale.query("SELECT count() > 0 FROM execution_events").scalar()
        finally:
            stale.close()

        crashing.start(TICKWHEEL_HISTORY_MAX_BATCH="7")
        reader = crashing.reader()
        wait_caught_up(kafka_bootstrap, crashing.group)
        assert duplicate_rows(reader) > 0, "the redelivered batch landed again as new rows"
        assert documented_answers(reader, scenario) == expected
        # The CLI in another process reads through the running sink (the directory is held:
        # opening it would fail), and gets the same answer.
        code, out, err = run_cli(
            ["history", "sql", "SELECT uniqExact(event_id) AS n FROM execution_events",
             "--json", "--history-dir", str(crashing.history_dir)]
        )  # fmt: skip
        assert code == 0, err
        assert json.loads(out) == [{"n": len({e["event_id"] for e in scenario.events})}]
    finally:
        reference.stop()
        crashing.stop()
