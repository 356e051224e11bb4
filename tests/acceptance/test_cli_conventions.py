"""The CLI's conventions, as a user meets them: exit 0 on success, 1 for an error to act on
(one line, no traceback), 2 for usage and refused input; `--json` on every verb that prints
data; flags that name their variables; and no ClickHouse client loaded by a command that does
not read the history. None of these needs a broker."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tickwheel.cli import build_parser

pytestmark = pytest.mark.acceptance

# The verbs of stack, topology, executions, history and workflows, each of which prints data.
# Commands that run until stopped and print a log, not an answer: no `--json` to ask for.
LONG_RUNNING = {("worker",), ("demo",)}


def _leaf_verbs() -> list[tuple[str, ...]]:
    """Every command path of the CLI (`jobs create`, `history workflows timeline`, …), read from
    the parser itself, so a verb added tomorrow is covered without editing this test."""
    found: list[tuple[str, ...]] = []

    def walk(parser: Any, path: tuple[str, ...]) -> None:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups:
            found.append(path)
            return
        for name, child in groups[0].choices.items():
            walk(child, (*path, name))

    walk(build_parser(), ())
    return found


DATA_VERBS = [verb for verb in _leaf_verbs() if verb not in LONG_RUNNING]


def run_cli(
    tmp_path: Path, *args: str, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TICKWHEEL_HOME": str(tmp_path / "home"),
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",  # nothing listens: nothing here needs it
    }
    env.pop("CLICKHOUSE_URL", None)
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "tickwheel.cli", *args],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def one_line_without_traceback(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("tickwheel: error: "), lines[0]
    return lines[0]


def _subparser(*path: str) -> object:
    parser: object = build_parser()
    for name in path:
        actions = parser._subparsers._group_actions  # type: ignore[attr-defined]
        parser = actions[0].choices[name]
    return parser


def test_help_exits_0_and_names_the_exit_codes_and_the_environment(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    assert "exit status:" in result.stdout
    for variable in ("KAFKA_BOOTSTRAP_SERVERS", "TICKWHEEL_TOPIC_PREFIX", "TICKWHEEL_HOME"):
        assert variable in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("no-such-command",),
        ("stack", "up", "--no-such-flag"),
        ("stack", "up", "--timers", "many"),
        ("stack", "up", "--json"),  # --json needs --detach
        ("demo", "--duration", "0"),
        ("history", "audit", "job"),  # --from and --to are required
    ],
)
def test_a_usage_error_exits_2_with_argparse_s_usage_line(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = run_cli(tmp_path, *args)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "usage:" in result.stderr
    assert "Traceback" not in result.stderr


def test_refused_input_exits_2_in_one_line_before_any_broker_is_looked_for(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    result = run_cli(tmp_path, "executions", "cancel", "   ")
    assert result.returncode == 2, result.stderr
    assert "execution_id" in one_line_without_traceback(result)
    # The unreachable broker would take its 5 s probe: the refusal comes first.
    assert time.monotonic() - started < 4.5


def test_refused_history_input_exits_2(tmp_path: Path) -> None:
    result = run_cli(
        tmp_path, "history", "audit", "job", "--from", "yesterday", "--to", "2026-01-01T00:00:00Z"
    )
    assert result.returncode == 2, result.stderr
    assert "--from" in one_line_without_traceback(result)


@pytest.mark.parametrize(
    "args",
    [
        ("history", "sql", "SELECT 1"),
        ("history", "query", "failure_rates"),
        ("executions", "get", "exec-1"),
    ],
)
def test_a_missing_history_store_exits_1_in_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "no-history"
    result = run_cli(tmp_path, *args, "--history-dir", str(missing))
    assert result.returncode == 1, result.stderr
    assert "no embedded history store" in one_line_without_traceback(result)
    assert not missing.exists()


def test_stack_status_and_down_print_json_when_nothing_runs(tmp_path: Path) -> None:
    status = run_cli(tmp_path, "stack", "status", "--json")
    assert status.returncode == 1  # stopped
    assert json.loads(status.stdout)["running"] is False

    down = run_cli(tmp_path, "stack", "down", "--json")
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout) == {"stopped": [], "was_running": False}


def test_topology_show_json_is_the_declared_topology(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "topology", "show", "--json")
    assert result.returncode == 0, result.stderr
    names = {topic["name"] for topic in json.loads(result.stdout)}
    assert {"jobs.definitions", "executions.events", "executions.control"} <= names


@pytest.mark.parametrize("verb", DATA_VERBS, ids=" ".join)
def test_every_verb_that_prints_data_has_json_and_only_as_an_output_flag(
    verb: tuple[str, ...],
) -> None:
    flags = {
        option: action
        for action in _subparser(*verb)._actions  # type: ignore[attr-defined]
        for option in action.option_strings
    }
    assert "--json" in flags
    # `--json` asks for JSON out; a definition comes in through --file or --definition.
    assert isinstance(flags["--json"], argparse._StoreTrueAction)


def test_the_walk_finds_every_group_and_the_long_running_commands() -> None:
    groups = {verb[0] for verb in DATA_VERBS}
    assert {"jobs", "calendars", "history", "workflows", "alerts", "dead-letters"} <= groups
    assert ("jobs", "update") in DATA_VERBS and ("dead-letters", "retry") in DATA_VERBS
    assert set(_leaf_verbs()) >= LONG_RUNNING


def test_the_history_location_flags_name_their_variables() -> None:
    from tickwheel.adapters.clickhouse import CLICKHOUSE_URL_VAR, HISTORY_DIR_VAR
    from tickwheel.cli import history_location

    # The CLI spells the names itself (importing the adapter costs every command 0.2 s).
    assert (history_location.CLICKHOUSE_URL_VAR, history_location.HISTORY_DIR_VAR) == (
        CLICKHOUSE_URL_VAR,
        HISTORY_DIR_VAR,
    )
    for verb in (("history", "sql"), ("executions", "get")):
        helps = {
            action.option_strings[0]: action.help or ""
            for action in _subparser(*verb)._actions  # type: ignore[attr-defined]
            if action.option_strings
        }
        assert HISTORY_DIR_VAR in helps["--history-dir"]
        assert CLICKHOUSE_URL_VAR in helps["--clickhouse-url"]


@pytest.mark.parametrize("args", [("--help",), ("topology", "show"), ("stack", "status")])
def test_a_command_that_reads_no_history_loads_no_clickhouse_client(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = run_cli(tmp_path, *args, python_flags=("-X", "importtime"))
    assert "Traceback" not in result.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert not {"clickhouse_connect", "chdb"} & imported
