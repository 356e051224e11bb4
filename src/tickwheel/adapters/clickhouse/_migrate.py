"""Applying the versioned migrations (`_migrations.py` loads and checks them) through a
store's writer client: the bootstrap table first, then every pending file in version order."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import ClickHouseError

from tickwheel.adapters.clickhouse._migrations import (
    default_topology_dir,
    load_migrations,
    pending,
)
from tickwheel.adapters.clickhouse._sql import split_statements
from tickwheel.ports.history import HistoryStoreError


def apply_migrations(
    writer: Client,
    *,
    ddl_dir: Path | None,
    retention: Mapping[str, int],
    location: str,
) -> list[str]:
    """Apply pending migrations in version order; return the names applied. The caller holds
    the store's migrate and write locks."""
    ddl_dir = ddl_dir or default_topology_dir()
    migrations = load_migrations(ddl_dir / "migrations")
    bootstrap = split_statements((ddl_dir / "schema_migrations.sql").read_text("utf-8"))
    try:
        for statement in bootstrap:
            writer.command(statement)
        recorded = writer.query(
            "SELECT version, name, checksum FROM schema_migrations FINAL"
        ).result_rows
        applied = {int(row[0]): (str(row[1]), str(row[2])) for row in recorded}
        todo = pending(migrations, applied)
        for migration in todo:
            for statement in migration.statements(retention):
                writer.command(statement)
            # Recorded only once every statement succeeded; statements are IF NOT EXISTS,
            # so an interrupted migration simply runs again.
            writer.insert(
                "schema_migrations",
                [[migration.version, migration.name, migration.checksum]],
                column_names=["version", "name", "checksum"],
            )
    except ClickHouseError as exc:
        raise HistoryStoreError(f"migrating the history store {location} failed: {exc}") from exc
    return [migration.name for migration in todo]
