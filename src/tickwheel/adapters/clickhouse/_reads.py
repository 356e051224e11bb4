"""The read side of a store: the reader session's caps and `readonly`, one read-only query,
and bringing the reader back in step after a query failed part-way (decisions 0032, 0051)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from tickwheel.adapters.clickhouse._limits import QueryLimits
from tickwheel.adapters.clickhouse._sql import check_read_only
from tickwheel.ports.history import (
    HistoryQueryError,
    HistoryQueryRejected,
    HistoryStoreError,
    QueryResult,
)

_READONLY_ERROR_CODE = 164  # ClickHouse's READONLY
#: The `readonly` level of reader sessions: 1 refuses writes, DDL, `file()`/`url()`, and any
#: change of setting, so a query cannot lift the caps set before it (2 would let it:
#: decision 0051 supersedes 0032 on this point).
_READER_READONLY = "1"
_RESYNC_SENTINEL = "tickwheel:in-step"
_RESYNC_ATTEMPTS = 3


def lock_reader(reader: Client, limits: QueryLimits) -> None:
    """Put the caps on the reader's session, then make it read-only, which freezes them."""
    for key, value in limits.session_settings().items():
        reader.set_client_setting(key, value)
    reader.set_client_setting("readonly", _READER_READONLY)


def run_query(reader: Client, sql: str, params: Mapping[str, Any] | None) -> QueryResult:
    """One read-only statement on `reader`, `{name:Type}` params bound. A ClickHouse failure
    propagates: the store resyncs its reader, then raises what `explain` makes of it."""
    check_read_only(sql, params)
    result = reader.query(sql, parameters=dict(params or {}))
    return QueryResult(
        columns=tuple(result.column_names),
        types=tuple(column_type.name for column_type in result.column_types),
        rows=[tuple(row) for row in result.result_rows],
    )


def explain(
    sql: str, exc: ClickHouseError, limits: QueryLimits
) -> HistoryStoreError | HistoryQueryRejected:
    """The error a caller gets for a query ClickHouse failed."""
    code = getattr(exc, "code", None)
    if code == _READONLY_ERROR_CODE:
        return HistoryQueryRejected(
            sql, "ClickHouse refused it in readonly mode (settings are fixed too)"
        )
    capped = limits.explain(code)
    if capped is not None:
        return HistoryQueryError(sql, capped)
    return HistoryQueryError(sql, f"the history query failed: {exc}")


def in_step(reader: Client) -> bool:
    """Bring `reader` back in step after a query failed part-way through its result; False
    if it stays out of step (the caller replaces it).

    Observed with chDB 26.9 through clickhouse-connect 1.12: when a query fails after its
    first blocks (a row cap, a timeout, `throwIf`), the next query on that client returns the
    failed query's remaining rows instead of its own answer. A sentinel query absorbs them.
    """
    for _ in range(_RESYNC_ATTEMPTS):
        try:
            rows = reader.query(f"SELECT '{_RESYNC_SENTINEL}'").result_rows
        except ClickHouseError:
            continue
        if [tuple(row) for row in rows] == [(_RESYNC_SENTINEL,)]:
            return True
    return False
