"""How `tickwheel history` prints a query's answer: a JSON array of objects, or an aligned
text table (values ClickHouse returns as Python types made readable: instants in ISO 8601)."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import json
import uuid
from typing import Any, TextIO

from tickwheel.ports.history import QueryResult

_MAX_CELL_WIDTH = 60


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
