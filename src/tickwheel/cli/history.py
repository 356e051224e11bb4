"""`tickwheel history sql "SELECT ..."`: read-only SQL over the history store.

For now the command opens the store itself; in embedded mode that fails with a clear message
while another process (the history service) owns the directory. Issue 6 routes it through
the owner instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import decimal
import ipaddress
import json
import sys
import uuid
from pathlib import Path
from typing import Any, TextIO

from tickwheel.adapters.clickhouse import (
    CLICKHOUSE_URL_VAR,
    DEFAULT_HISTORY_DIR,
    HISTORY_DIR_VAR,
    HistorySettings,
    open_history_store,
)
from tickwheel.errors import InvalidInput
from tickwheel.ports.history import QueryResult

_MAX_CELL_WIDTH = 60


def register(subparsers: Any) -> None:
    """Add the `history` command group to the top-level parser's subparsers."""
    history = subparsers.add_parser(
        "history",
        help="query the execution history (ClickHouse: embedded chDB or a server)",
        description="Query the execution history kept in ClickHouse. See docs/history.md.",
    )
    commands = history.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)
    sql = commands.add_parser(
        "sql",
        help="run one read-only SQL statement",
        description=(
            "Run one read-only statement (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN, EXISTS) over "
            "the history tables; writes and DDL are refused. Bind {name:Type} placeholders "
            "with --param name=value."
        ),
    )
    sql.add_argument("statement", metavar="SQL", help='e.g. "SELECT count() FROM execution_events"')
    sql.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    sql.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="value for a {NAME:Type} placeholder (repeatable)",
    )
    sql.add_argument(
        "--history-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"embedded store directory (env {HISTORY_DIR_VAR}; default {DEFAULT_HISTORY_DIR})",
    )
    sql.add_argument(
        "--clickhouse-url",
        default=None,
        metavar="URL",
        help=f"query a ClickHouse server instead, http://user:pass@host:8123/db "
        f"(env {CLICKHOUSE_URL_VAR})",
    )
    sql.set_defaults(handler=run_sql)


def _parse_params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InvalidInput("--param", f"{item!r} is not NAME=VALUE")
        params[name] = value
    return params


def run_sql(args: argparse.Namespace) -> int:
    """Handler of `history sql`: print the answer as a table, or JSON with `--json`."""
    params = _parse_params(args.param)
    settings = HistorySettings.from_env()
    if args.history_dir is not None:
        settings = dataclasses.replace(settings, history_dir=args.history_dir)
    if args.clickhouse_url:
        settings = dataclasses.replace(settings, clickhouse_url=args.clickhouse_url)
    with open_history_store(settings, create=False) as store:
        result = store.query(args.statement, params)
    if args.json:
        print_json(result, sys.stdout)
    else:
        print_table(result, sys.stdout)
    return 0


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(
        value, uuid.UUID | decimal.Decimal | ipaddress.IPv4Address | ipaddress.IPv6Address
    ):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list | tuple | set):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    return value


def print_json(result: QueryResult, out: TextIO) -> None:
    """The rows as a JSON array of `{column: value}` objects; instants in ISO 8601."""
    rows = [{key: _json_value(value) for key, value in row.items()} for row in result.as_dicts()]
    json.dump(rows, out, indent=2, ensure_ascii=False)
    out.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    text = str(_json_value(value)) if not isinstance(value, str) else value
    text = text.replace("\n", "\\n")
    return text if len(text) <= _MAX_CELL_WIDTH else text[: _MAX_CELL_WIDTH - 1] + "…"


def print_table(result: QueryResult, out: TextIO) -> None:
    """An aligned text table with a row count; numbers right-aligned."""
    cells = [[_cell(value) for value in row] for row in result.rows]
    widths = [len(name) for name in result.columns]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    numeric = [
        any(t.startswith(prefix) for prefix in ("Int", "UInt", "Float", "Decimal"))
        for t in (column_type.removeprefix("Nullable(") for column_type in result.types)
    ]

    def line(values: list[str]) -> str:
        parts = [
            value.rjust(width) if is_number else value.ljust(width)
            for value, width, is_number in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    if result.columns:
        out.write(line(list(result.columns)) + "\n")
        out.write("  ".join("-" * width for width in widths) + "\n")
        for row in cells:
            out.write(line(row) + "\n")
    count = len(result.rows)
    out.write(f"({count} row{'s' if count != 1 else ''})\n")
