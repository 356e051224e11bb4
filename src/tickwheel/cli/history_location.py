"""Where a `tickwheel` verb reads the history: `--history-dir` and `--clickhouse-url`, over the
environment's settings. `history` and its `calendars` verb, and `executions get`, take them.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tickwheel.adapters.clickhouse import HistorySettings

# The names of tickwheel.adapters.clickhouse's variables, spelled here because importing the
# adapter loads the ClickHouse client (0.2 s) into every `tickwheel` command, --help included;
# tests/acceptance/test_cli_conventions.py checks that the two agree.
CLICKHOUSE_URL_VAR = "CLICKHOUSE_URL"
HISTORY_DIR_VAR = "TICKWHEEL_HISTORY_DIR"


def add_location_flags(parser: argparse.ArgumentParser) -> None:
    """`--history-dir` and `--clickhouse-url`: where a verb reads the history."""
    parser.add_argument(
        "--history-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"embedded store directory (env {HISTORY_DIR_VAR}; default $TICKWHEEL_HOME/history, "
        "i.e. .tickwheel/history)",
    )
    parser.add_argument(
        "--clickhouse-url",
        default=None,
        metavar="URL",
        help=f"query a ClickHouse server instead, http://user:pass@host:8123/db "
        f"(env {CLICKHOUSE_URL_VAR})",
    )


def history_settings(args: argparse.Namespace) -> HistorySettings:
    """The environment's history settings, with the location flags applied over them."""
    from tickwheel.history import history_settings_from_env

    settings = history_settings_from_env()
    if args.history_dir is not None:
        settings = dataclasses.replace(settings, history_dir=args.history_dir)
    if args.clickhouse_url:
        settings = dataclasses.replace(settings, clickhouse_url=args.clickhouse_url)
    return settings
