"""The write side of a store: one batch of rows, or one batch of encoded records that
ClickHouse decodes itself, each one synchronous insert carrying its deduplication token."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from tickwheel.ports.history import HistoryStoreError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What a deduplication token may hold (the sink's are `tickwheel-history:<table>:<hex>`): it is
# written into the statement, so nothing that could close the quote.
_TOKEN = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")


def check_table(table: str, what: str = "table") -> None:
    if not IDENTIFIER.match(table):
        raise HistoryStoreError(f"{table!r} is not a {what} name (letters, digits, _)")


def insert_settings(dedup_token: str | None, fold_copies: bool = True) -> dict[str, Any]:
    # Synchronous insert: the sink commits Kafka offsets only after this returns, so the
    # batch must be in a part by then, not in an async-insert buffer (decision 0151).
    settings: dict[str, Any] = {"async_insert": 0}
    if not fold_copies:
        # No ReplacingMergeTree pass over each inserted block: the fast path's tables end
        # their sorting key with event_id, so all it could fold is an exact copy within one
        # batch, which FINAL / uniqExact fold at query time anyway (decisions 0030, 0188).
        settings["optimize_on_insert"] = 0
    if dedup_token is not None:
        settings["insert_deduplication_token"] = dedup_token
    return settings


def insert_rows(
    writer: Client, table: str, rows: Sequence[Mapping[str, Any]], dedup_token: str | None
) -> None:
    """Insert rows that all have the same keys, column-major as the native format is: the
    client then writes each column as it is instead of pivoting the rows again (0072)."""
    check_table(table)
    if not rows:
        return
    columns = list(rows[0])
    expected = set(columns)
    for index, row in enumerate(rows):
        if set(row) != expected:
            raise HistoryStoreError(
                f"insert into {table}: row {index} has columns {sorted(row)}, the first row "
                f"has {sorted(expected)}; every row of a batch must have the same columns"
            )
    data = [[row[column] for row in rows] for column in columns]
    try:
        writer.insert(
            table,
            data,
            column_names=columns,
            settings=insert_settings(dedup_token),
            column_oriented=True,
        )
    except (ClickHouseError, TypeError, ValueError) as exc:
        raise HistoryStoreError(f"insert into {table} failed: {exc}") from exc


def encoded_statement(
    table: str, columns: Sequence[str], select: str, source: str, dedup_token: str | None
) -> str:
    """`INSERT INTO table (columns) SETTINGS ... SELECT select FROM source`."""
    return union_statement(table, columns, [(select, source)], dedup_token)


def union_statement(
    table: str,
    columns: Sequence[str],
    selects: Sequence[tuple[str, str]],
    dedup_token: str | None,
) -> str:
    """`INSERT INTO table (columns) SETTINGS ... SELECT a FROM s UNION ALL SELECT b FROM t`:
    one insert of rows computed from several sources, each `(select list, source)`. Only the
    fast path's tables are written this way (their sorting keys end with event_id), so
    copies are left to FINAL, not folded per insert (`insert_settings`)."""
    check_table(table)
    for column in columns:
        check_table(column, "column")
    if not selects:
        raise HistoryStoreError(f"insert into {table}: no source to select from")
    if dedup_token is not None and not _TOKEN.match(dedup_token):
        raise HistoryStoreError(f"{dedup_token!r} is not a deduplication token (A-Z a-z 0-9 _.:/-)")
    settings = ", ".join(
        f"{key} = {value!r}" if isinstance(value, str) else f"{key} = {value}"
        for key, value in insert_settings(dedup_token, fold_copies=False).items()
    )
    union = " UNION ALL ".join(f"SELECT {select} FROM {source}" for select, source in selects)
    return f"INSERT INTO {table} ({', '.join(columns)}) SETTINGS {settings} {union}"


def insert_encoded_file(
    writer: Client,
    table: str,
    columns: Sequence[str],
    select: str,
    structure: str,
    data: bytes,
    input_format: str,
    dedup_token: str | None,
    spool_dir: str | None = None,
) -> None:
    """Embedded chDB: the engine reads the records from a spooled file (`file()`), the way
    clickhouse-connect's own chDB inserts do (`FROM INFILE`); the data never becomes Python
    values. The file lives only for the statement."""
    insert_encoded_files(
        writer, table, columns, [(select, structure, data)], input_format, dedup_token, spool_dir
    )


def insert_encoded_files(
    writer: Client,
    table: str,
    columns: Sequence[str],
    sources: Sequence[tuple[str, str, bytes]],
    input_format: str,
    dedup_token: str | None,
    spool_dir: str | None = None,
) -> None:
    """Embedded chDB, several kinds of records into one table in one statement: each
    `(select, structure, data)` spooled to its own file, their SELECTs joined by UNION ALL.
    One insert is one part per day partition and one statement to analyse, where one insert
    per kind made a part each (decision 0187). The files live only for the statement."""
    paths: list[str] = []
    try:
        selects = []
        for select, structure, data in sources:
            fd, path = tempfile.mkstemp(prefix="tickwheel-insert-", suffix=".bin", dir=spool_dir)
            paths.append(path)
            with os.fdopen(fd, "wb") as spool:
                spool.write(data)
            selects.append(
                (select, f"file({_quote(path)}, {_quote(input_format)}, {_quote(structure)})")
            )
        statement = union_statement(table, columns, selects, dedup_token)
        try:
            writer.command(statement)
        except ClickHouseError as exc:
            raise HistoryStoreError(f"insert into {table} failed: {exc}") from exc
    finally:
        for path in paths:
            os.unlink(path)


def insert_encoded_body(
    writer: Client,
    table: str,
    columns: Sequence[str],
    select: str,
    structure: str,
    data: bytes,
    input_format: str,
    dedup_token: str | None,
) -> None:
    """A ClickHouse server: the records travel as the request's body (`input()`)."""
    check_table(input_format, "format")
    source = f"input({_quote(structure)}) FORMAT {input_format}"
    statement = encoded_statement(table, columns, select, source, dedup_token)
    try:
        writer.command(statement, data=data)
    except ClickHouseError as exc:
        raise HistoryStoreError(f"insert into {table} failed: {exc}") from exc


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
