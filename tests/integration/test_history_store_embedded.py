"""Embedded chDB's one-owner directory (chDB only): two stores of one process share it, a
second directory in the same process is busy, and another process's directory is refused
(by the store and the CLI alike) until that process dies."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.history_cli import run_cli
from tests.integration.history_store_backends import (
    documented_answers,
    expected_answers,
    make_events,
)
from tickwheel.adapters.clickhouse import (
    ChdbHistoryStore,
)
from tickwheel.ports.history import (
    HistoryStoreBusy,
)

pytestmark = pytest.mark.integration


# --- embedded ownership (chDB only) -----------------------------------------------------


def test_embedded_two_stores_on_one_directory_share_it(tmp_path: Path) -> None:
    with ChdbHistoryStore(tmp_path / "h") as writer, ChdbHistoryStore(tmp_path / "h") as reader:
        writer.migrate()
        rows = make_events(executions=3, days=1)
        writer.insert("execution_events", rows)
        assert documented_answers(reader) == expected_answers(rows)


def test_embedded_second_directory_in_one_process_is_busy(tmp_path: Path) -> None:
    with ChdbHistoryStore(tmp_path / "a"), pytest.raises(HistoryStoreBusy, match="one directory"):
        ChdbHistoryStore(tmp_path / "b")
    # Once the first is closed, the other directory opens.
    ChdbHistoryStore(tmp_path / "b").close()


def test_embedded_directory_owned_by_another_process_is_refused_then_freed_by_its_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "owned"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tickwheel.adapters.clickhouse import ChdbHistoryStore\n"
            "s = ChdbHistoryStore(sys.argv[1]); s.migrate(); print('ready', flush=True)\n"
            "sys.stdin.read()",
            str(directory),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "ready"

        with pytest.raises(HistoryStoreBusy) as busy:
            ChdbHistoryStore(directory)
        assert busy.value.owner_pid == owner.pid
        assert f"process {owner.pid}" in str(busy.value)

        # The CLI says the same, through main's TickwheelError handling (exit 2).
        monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
        code, _, err = run_cli(["history", "sql", "SELECT 1", "--history-dir", str(directory)])
        assert code == 2
        assert f"process {owner.pid}" in err
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)

    # A killed owner leaves no stale lock: the directory opens, with its data.
    with ChdbHistoryStore(directory) as reopened:
        assert reopened.migrate() == []
