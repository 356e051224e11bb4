"""History-store settings from the environment, and the factory that picks a backend."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tickwheel.adapters.clickhouse._limits import QueryLimits
from tickwheel.adapters.clickhouse._migrations import DEFAULT_RETENTION_DAYS, validate_retention
from tickwheel.adapters.clickhouse._store import ChdbHistoryStore, ClickHouseServerHistoryStore
from tickwheel.errors import InvalidInput
from tickwheel.ports.history import HistoryStore, MigrationError

CLICKHOUSE_URL_VAR = "CLICKHOUSE_URL"
#: Credentials of the reader on a server (a read-only user); the writer's when unset.
CLICKHOUSE_READ_URL_VAR = "CLICKHOUSE_READ_URL"
HISTORY_DIR_VAR = "TICKWHEEL_HISTORY_DIR"
RETENTION_VAR = "TICKWHEEL_HISTORY_RETENTION_DAYS"
DEFAULT_HISTORY_DIR = Path(".tickwheel/history")


@dataclass(frozen=True)
class HistorySettings:
    """Where history lives and how long it is kept.

    `clickhouse_url` set → a ClickHouse server; otherwise embedded chDB in `history_dir`.
    `retention_days` overrides `DEFAULT_RETENTION_DAYS` per table; it is written into a
    table's TTL when the table is created (changing it later needs `ALTER TABLE ... MODIFY
    TTL`, see docs/history.md). `query_limits` caps every read-only query;
    `clickhouse_read_url` gives the server's reader credentials of its own.
    """

    clickhouse_url: str | None = None
    history_dir: Path = DEFAULT_HISTORY_DIR
    retention_days: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))
    ddl_dir: Path | None = None
    clickhouse_read_url: str | None = None
    query_limits: QueryLimits = field(default_factory=QueryLimits)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HistorySettings:
        """Read `CLICKHOUSE_URL`, `CLICKHOUSE_READ_URL`, `TICKWHEEL_HISTORY_DIR`,
        `TICKWHEEL_HISTORY_RETENTION_DAYS` (e.g. `execution_events=30,alerts=90`) and the
        query caps `TICKWHEEL_HISTORY_QUERY_MAX_ROWS` / `_MAX_BYTES` / `_TIMEOUT_S`."""
        env = os.environ if environ is None else environ
        url = env.get(CLICKHOUSE_URL_VAR, "").strip() or None
        read_url = env.get(CLICKHOUSE_READ_URL_VAR, "").strip() or None
        history_dir = Path(env.get(HISTORY_DIR_VAR, "").strip() or DEFAULT_HISTORY_DIR)
        retention = parse_retention(env.get(RETENTION_VAR, ""))
        return cls(
            clickhouse_url=url,
            history_dir=history_dir,
            retention_days=retention,
            clickhouse_read_url=read_url,
            query_limits=QueryLimits.from_env(env),
        )


def parse_retention(text: str) -> dict[str, int]:
    """`table=days,table=days` → defaults overlaid with those values."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        table, sep, days = item.partition("=")
        if not sep or not days.strip().isdigit():
            raise InvalidInput(
                RETENTION_VAR, f"{item!r} is not table=days (e.g. execution_events=400)"
            )
        overrides[table.strip()] = int(days)
    try:
        return validate_retention(overrides)
    except MigrationError as exc:
        raise InvalidInput(RETENTION_VAR, str(exc)) from None


def open_history_store(
    settings: HistorySettings | None = None, *, create: bool = True
) -> ChdbHistoryStore | ClickHouseServerHistoryStore:
    """Open the history store the settings name (from the environment if `None`).

    With `create=False`, a missing embedded directory is an error instead of a new, empty
    store (what a reader wants). Does not migrate: the writer calls `migrate()`.
    """
    settings = settings or HistorySettings.from_env()
    if settings.clickhouse_url:
        return ClickHouseServerHistoryStore(
            settings.clickhouse_url,
            retention_days=settings.retention_days,
            ddl_dir=settings.ddl_dir,
            read_url=settings.clickhouse_read_url,
            limits=settings.query_limits,
        )
    return ChdbHistoryStore(
        settings.history_dir,
        retention_days=settings.retention_days,
        ddl_dir=settings.ddl_dir,
        create=create,
        limits=settings.query_limits,
    )


def _conforms(store: ChdbHistoryStore | ClickHouseServerHistoryStore) -> HistoryStore:
    # Lets mypy prove both backends satisfy the port.
    return store
