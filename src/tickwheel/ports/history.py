"""The history store: where every event lands, and where analysts ask what happened.

`HistoryStore` is the port services and the CLI are written against; the adapters in
`tickwheel.adapters.clickhouse` implement it over embedded chDB and a ClickHouse server with
the same DDL and the same SQL. Its errors live here too, because they are part of the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tickwheel.errors import TickwheelError


@dataclass(frozen=True)
class QueryResult:
    """The answer to one read-only query: column names, their ClickHouse types, and the rows.

    Values are Python objects: ints, floats, str, `datetime` (timezone-aware, UTC, for the
    `DateTime64(3, 'UTC')` columns), `date`, `uuid.UUID`, `None` for NULL, lists for arrays.
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def as_dicts(self) -> list[dict[str, Any]]:
        """The rows as `{column: value}` dicts, in column order."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def scalar(self) -> Any:
        """The single value of a one-row, one-column answer (e.g. `SELECT count() ...`)."""
        if len(self.rows) != 1 or len(self.columns) != 1:
            raise ValueError(
                f"expected one row of one column, got {len(self.rows)} rows of "
                f"{len(self.columns)} columns"
            )
        return self.rows[0][0]


@runtime_checkable
class HistoryStore(Protocol):
    """Time-partitioned event history in ClickHouse (DESIGN §8, §13).

    Writers (the history sink) call `migrate` once at start-up and then `insert` batches;
    readers (CLI, API, watchdog audits) call `query`, which is read-only.
    """

    def migrate(self) -> list[str]:
        """Apply pending schema migrations in order; return the names of those applied.

        Idempotent: a second call applies nothing and returns `[]`.
        """
        ...

    def insert(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        dedup_token: str | None = None,
    ) -> None:
        """Insert one batch of rows (all with the same keys) into `table`.

        With `dedup_token`, inserting the same batch again with the same token is a no-op
        (ClickHouse insert deduplication); derive it from what identifies the batch, e.g.
        `topic/partition/first_offset-last_offset`. Independently of the token, every table is
        a ReplacingMergeTree on its `event_id`, so queries reading `FINAL` stay correct if a
        redelivered batch was cut differently (see docs/history.md).
        """
        ...

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Run one read-only statement (`SELECT`, `WITH`, `SHOW`, `DESCRIBE`, `EXPLAIN`,
        `EXISTS`) with `{name:Type}` placeholders bound from `params`.

        Raises `HistoryQueryRejected` for writes, DDL, several statements, or access outside
        the database (files, URLs, remote servers); `HistoryQueryError` if ClickHouse fails it.
        """
        ...

    def close(self) -> None:
        """Release the connection(s); idempotent. In embedded mode this frees the directory."""
        ...


class HistoryStoreError(TickwheelError, RuntimeError):
    """The history store could not be opened, migrated or written."""


class HistoryStoreBusy(HistoryStoreError):
    """The embedded store's directory is held by another process (or, in this process, chDB
    already serves another directory: chDB hosts one directory per process)."""

    def __init__(self, path: str, message: str, owner_pid: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.owner_pid = owner_pid


class MigrationError(HistoryStoreError):
    """A migration file is malformed, or an applied migration was edited afterwards."""


class HistoryQueryError(HistoryStoreError):
    """ClickHouse refused or failed a query (syntax error, unknown table, ...)."""

    def __init__(self, sql: str, message: str) -> None:
        super().__init__(message)
        self.sql = sql


class HistoryQueryRejected(TickwheelError, PermissionError):
    """A statement given to `HistoryStore.query` is not a single read-only statement."""

    def __init__(self, sql: str, reason: str) -> None:
        super().__init__(
            f"history queries are read-only: {reason}. Accepted: one SELECT, WITH, SHOW, "
            "DESCRIBE, EXPLAIN or EXISTS statement over the history tables"
        )
        self.sql = sql
        self.reason = reason
