"""An in-memory `HistoryStore`, for a unit tier that runs the history sink without chDB (issue
10, item 4), the way `tickwheel.adapters.kafka.memory` stands in for a broker.

What it keeps of the ClickHouse store: the checks `insert` makes (a table name, every row of
a batch with the same columns), and insert deduplication: a repeat of a table's token among
its last `DEDUP_WINDOW` inserts is dropped, as `non_replicated_deduplication_window` does
(decision 0030). What it leaves out: SQL. `query` answers nothing (it raises, naming the
readers to use instead); `rows(table)` is every row inserted, copies included, as a query
without `FINAL` would see them, and `final(table)` one row per `event_id`, the last
inserted, as `FINAL` sees a ReplacingMergeTree without a version column.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from tickwheel.ports.history import HistoryQueryError, HistoryStoreError, QueryResult

#: Tokens remembered per table (the migrations' `non_replicated_deduplication_window`).
DEDUP_WINDOW = 1000
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MemoryHistoryStore:
    """`HistoryStore` over Python lists; safe to share between threads."""

    location = "memory"

    def __init__(self) -> None:
        self._tables: dict[str, list[dict[str, Any]]] = {}
        self._tokens: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.inserts = 0  # inserts that landed (a deduplicated repeat is not one)

    def migrate(self) -> list[str]:
        """Nothing to create: tables appear with their first insert. Always `[]`."""
        self._check_open()
        return []

    def insert(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        dedup_token: str | None = None,
    ) -> None:
        """Append one batch; with `dedup_token`, a repeat within the window is dropped."""
        self._check_open()
        if not _IDENTIFIER.match(table):
            raise HistoryStoreError(f"{table!r} is not a table name (letters, digits, _)")
        if not rows:
            return
        expected = set(rows[0])
        for index, row in enumerate(rows):
            if set(row) != expected:
                raise HistoryStoreError(
                    f"insert into {table}: row {index} has columns {sorted(row)}, the first row "
                    f"has {sorted(expected)}; every row of a batch must have the same columns"
                )
        with self._lock:
            if dedup_token is not None:
                seen = self._tokens.setdefault(table, OrderedDict())
                if dedup_token in seen:
                    return
                seen[dedup_token] = None
                while len(seen) > DEDUP_WINDOW:
                    seen.popitem(last=False)
            self._tables.setdefault(table, []).extend(dict(row) for row in rows)
            self.inserts += 1

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Refused: this store runs no SQL."""
        raise HistoryQueryError(
            sql,
            "the in-memory history store runs no SQL; read it with rows(table) or "
            "final(table), or use ChdbHistoryStore for queries",
        )

    def rows(self, table: str) -> list[dict[str, Any]]:
        """Every row inserted into `table`, in insert order, copies included."""
        with self._lock:
            return [dict(row) for row in self._tables.get(table, [])]

    def final(self, table: str) -> list[dict[str, Any]]:
        """One row per `event_id` (the last inserted), in order of first appearance."""
        latest: dict[Any, dict[str, Any]] = {}
        for row in self.rows(table):
            latest[row["event_id"]] = row
        return list(latest.values())

    def tables(self) -> list[str]:
        with self._lock:
            return sorted(self._tables)

    def close(self) -> None:
        """Idempotent; the rows stay readable."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise HistoryStoreError("the in-memory history store is closed")
