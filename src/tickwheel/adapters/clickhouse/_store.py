"""The two `HistoryStore` backends, embedded chDB and a ClickHouse server.

Both go through clickhouse-connect's `Client`: its `interface="chdb"` transport drives the
in-process chDB engine with the same query, insert, parameter-binding and type-conversion code
as its HTTP transport. So "the same DDL and queries" is one code path, not two kept in step
(docs/decisions/0031). Each store holds two clients: a writer for migrations and inserts, and
a reader whose session carries the per-query caps and then ClickHouse's `readonly = 1`, used
for every `query` (decisions 0032, 0051).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from tickwheel.adapters.clickhouse import _embedded
from tickwheel.adapters.clickhouse._limits import QueryLimits
from tickwheel.adapters.clickhouse._migrate import apply_migrations
from tickwheel.adapters.clickhouse._migrations import validate_retention
from tickwheel.adapters.clickhouse._reads import explain, in_step, lock_reader, run_query
from tickwheel.adapters.clickhouse._writes import (
    insert_encoded_body,
    insert_encoded_file,
    insert_encoded_files,
    insert_rows,
)
from tickwheel.ports.history import HistoryStoreError, QueryResult


class _ClientHistoryStore:
    """`HistoryStore` over a writer and a read-only reader clickhouse-connect client."""

    #: How encoded records reach the engine: a server reads them as the request's body.
    _encoded_insert = staticmethod(insert_encoded_body)

    def __init__(
        self,
        writer: Client,
        reader: Client,
        *,
        location: str,
        retention_days: Mapping[str, int] | None,
        ddl_dir: Path | None,
        migrate_lock: threading.Lock,
        limits: QueryLimits,
    ) -> None:
        self._writer = writer
        self._reader = reader
        self._location = location
        self._retention = validate_retention(retention_days or {})
        self._ddl_dir = ddl_dir
        self._migrate_lock = migrate_lock
        self._limits = limits
        # A clickhouse-connect client runs one request at a time (the chDB handle returns
        # empty results to a second query while one is streaming), so each client gets a lock;
        # reads and writes still proceed in parallel.
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._closed = False

    @property
    def location(self) -> str:
        """Where the history lives: the chDB directory, or the server URL without password."""
        return self._location

    @property
    def limits(self) -> QueryLimits:
        """The caps every `query` runs under."""
        return self._limits

    @property
    def retention_days(self) -> Mapping[str, int]:
        """Retention per table that `migrate` writes into new tables' TTL."""
        return dict(self._retention)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._location!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise HistoryStoreError(f"the history store {self._location} is closed")

    def migrate(self) -> list[str]:
        """Apply pending migrations in version order; return the names applied."""
        self._check_open()
        with self._migrate_lock, self._write_lock:
            return apply_migrations(
                self._writer,
                ddl_dir=self._ddl_dir,
                retention=self._retention,
                location=self._location,
            )

    def insert(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        dedup_token: str | None = None,
    ) -> None:
        """Insert one batch; with `dedup_token`, a repeat of the same token is dropped."""
        self._check_open()
        with self._write_lock:
            insert_rows(self._writer, table, rows, dedup_token)

    def insert_encoded(
        self,
        table: str,
        columns: Sequence[str],
        select: str,
        structure: str,
        data: bytes,
        input_format: str = "Avro",
        dedup_token: str | None = None,
    ) -> None:
        """Insert encoded records that ClickHouse decodes itself (`data` in `input_format`,
        read with `structure`), each row of `columns` computed by the `select` list; with
        `dedup_token`, a repeat of the same token is dropped. The sink's fast path: no Python
        value per field (decision 0123)."""
        self._check_open()
        with self._write_lock:
            self._encoded_insert(
                self._writer, table, columns, select, structure, data, input_format, dedup_token
            )

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Run one read-only statement on the reader session; bind `{name:Type}` params."""
        self._check_open()
        with self._read_lock:
            try:
                return run_query(self._reader, sql, params)
            except ClickHouseError as exc:
                self._resync_reader()
                raise explain(sql, exc, self._limits) from exc

    def _resync_reader(self) -> None:
        """Bring the reader back in step after a failed query, or replace it (`in_step`)."""
        if in_step(self._reader):
            return
        replacement = self._reopen_reader()
        if replacement is None:
            raise HistoryStoreError(
                f"the history reader of {self._location} is out of step after a failed query"
            )
        with contextlib.suppress(ClickHouseError):
            self._reader.close()
        self._reader = replacement

    def _reopen_reader(self) -> Client | None:
        """A fresh reader session, for backends that can open one; None otherwise."""
        return None

    def close(self) -> None:
        """Close both clients; idempotent."""
        if self._closed:
            return
        self._closed = True
        for client in (self._reader, self._writer):
            # Closing is best effort: nothing useful can be done with a failure here.
            with contextlib.suppress(ClickHouseError):
                client.close()
        self._after_close()

    def _after_close(self) -> None:
        """Hook for backends that hold more than the clients."""


class ChdbHistoryStore(_ClientHistoryStore):
    """History in embedded ClickHouse (chDB) in a local directory; the default backend.

    One process owns the directory: chDB's engine locks it while open, and a process can
    host only one directory. Several `ChdbHistoryStore`s on the same directory in one process
    are fine (they share the engine); a second process, or a second directory in this
    process, gets `HistoryStoreBusy`. Other processes read through the owner (issue 6).
    """

    #: The engine is in this process: it reads encoded records from a spooled file.
    _encoded_insert = staticmethod(insert_encoded_file)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention_days: Mapping[str, int] | None = None,
        ddl_dir: Path | None = None,
        create: bool = True,
        limits: QueryLimits | None = None,
    ) -> None:
        # chDB compares engine paths literally; one spelling per directory.
        directory = os.path.realpath(os.fspath(path))
        if not create and not os.path.isdir(directory):
            raise HistoryStoreError(
                f"no embedded history store at {directory}: nothing has recorded history "
                "there yet (start the stack, or point TICKWHEEL_HISTORY_DIR / --history-dir "
                "at the right directory, or CLICKHOUSE_URL at a server)"
            )
        os.makedirs(directory, exist_ok=True)
        limits = limits or QueryLimits()
        _embedded.acquire(directory)
        self._directory = directory
        try:
            writer = self._connect(directory, None)
            try:
                # Not `readonly` in the connection options: the client's own start-up reads
                # system.settings (~2,000 rows), which a row cap given there would refuse.
                reader = self._connect(directory, None)
                try:
                    lock_reader(reader, limits)
                except BaseException:
                    reader.close()
                    raise
            except BaseException:
                writer.close()
                raise
        except BaseException:
            _embedded.release(directory)
            raise
        super().__init__(
            writer,
            reader,
            location=directory,
            retention_days=retention_days,
            ddl_dir=ddl_dir,
            migrate_lock=_embedded.migrate_lock(directory),
            limits=limits,
        )

    def insert_encoded_union(
        self,
        table: str,
        columns: Sequence[str],
        sources: Sequence[tuple[str, str, bytes]],
        input_format: str = "Avro",
        dedup_token: str | None = None,
    ) -> None:
        """Like `insert_encoded`, for several kinds of encoded records, each
        `(select, structure, data)`, into one table in one statement (one part, one token):
        the sink's events and the `requested` rows its requests stand for (decision 0187).
        Only the embedded engine: a server reads one request body per statement."""
        self._check_open()
        with self._write_lock:
            insert_encoded_files(self._writer, table, columns, sources, input_format, dedup_token)

    @staticmethod
    def _connect(directory: str, options: dict[str, str] | None) -> Client:
        try:
            return clickhouse_connect.get_client(
                interface="chdb", path=directory, chdb_options=options, tz_mode="aware"
            )
        except ClickHouseError as exc:
            # Lost a race with another process between our probe and the engine's lock.
            if _embedded.held_by_another_process(directory):
                raise _embedded.busy_error(directory) from None
            raise HistoryStoreError(
                f"cannot open the embedded history store {directory}: {exc}"
            ) from exc

    @property
    def directory(self) -> str:
        """The chDB directory (absolute, symlinks resolved)."""
        return self._directory

    def _reopen_reader(self) -> Client | None:
        reader = self._connect(self._directory, None)
        try:
            lock_reader(reader, self.limits)
        except BaseException:
            reader.close()
            raise
        return reader

    def _after_close(self) -> None:
        _embedded.release(self._directory)


def redact_url(url: str) -> str:
    """`url` with any password replaced by `***`, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class ClickHouseServerHistoryStore(_ClientHistoryStore):
    """History in a ClickHouse server, e.g. `http://user:pass@host:8123/db` (`CLICKHOUSE_URL`).

    Tables are created in the URL's database (the user's default database if none). Queries
    use `read_url` when given (`CLICKHOUSE_READ_URL`): a user of their own, ideally with
    `readonly = 1`, the caps in its profile, and no FILE/URL/REMOTE grants — the server is
    then the authority and this store's checks come on top. Otherwise the reader uses the
    writer's credentials, with the caps and `readonly = 1` sent with every request.
    """

    def __init__(
        self,
        url: str,
        *,
        retention_days: Mapping[str, int] | None = None,
        ddl_dir: Path | None = None,
        read_url: str | None = None,
        limits: QueryLimits | None = None,
    ) -> None:
        limits = limits or QueryLimits()
        location = redact_url(url)
        writer = self._connect(url, location)
        try:
            reader_url = read_url or url
            reader = self._connect(reader_url, redact_url(reader_url))
            try:
                current = reader.server_settings.get("readonly")
                if current is None or current.value == "0":
                    lock_reader(reader, limits)
                # else: a user the server already makes read-only cannot change settings
                # (readonly = 1) or cannot lock them (2); its profile must carry the caps.
            except BaseException:
                reader.close()
                raise
        except BaseException:
            writer.close()
            raise
        super().__init__(
            writer,
            reader,
            location=location,
            retention_days=retention_days,
            ddl_dir=ddl_dir,
            migrate_lock=threading.Lock(),
            limits=limits,
        )

    @staticmethod
    def _connect(url: str, location: str) -> Client:
        try:
            # No HTTP session: settings travel with each request, and a session would make
            # two threads' queries on one client collide ("session is locked").
            return clickhouse_connect.get_client(
                dsn=url, autogenerate_session_id=False, tz_mode="aware"
            )
        except ClickHouseError as exc:
            message = str(exc).replace(url, location)
            raise HistoryStoreError(
                f"cannot connect to the ClickHouse server {location}: {message}"
            ) from None
