"""The history store against real ClickHouse (embedded chDB, and a server when `CLICKHOUSE_URL`
is set: `history_store_backends.py`): migrations, day partitions and TTLs, idempotent inserts
under redelivery, typed parameters, persistence across a reopen, and the factory's choice."""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest

from tests.integration.history_store_backends import (
    HISTORY_TABLES,
    Backend,
    Store,
    backend,
    documented_answers,
    expected_answers,
    make_events,
    raw_count,
    store,
)
from tickwheel.adapters.clickhouse import (
    DEFAULT_RETENTION_DAYS,
    ChdbHistoryStore,
    ClickHouseServerHistoryStore,
    HistorySettings,
    open_history_store,
)
from tickwheel.adapters.clickhouse._migrations import default_topology_dir
from tickwheel.ports.history import (
    HistoryStoreError,
)

pytestmark = pytest.mark.integration
__all__ = ["backend", "store"]  # fixtures, imported for pytest to find


# --- migrations -------------------------------------------------------------------------


def test_migrate_creates_every_history_table_and_records_each_migration(backend: Backend) -> None:
    store = backend.open()
    applied = store.migrate()

    files = sorted(p.stem for p in (default_topology_dir() / "migrations").glob("*.sql"))
    assert applied == files
    tables = {
        row[0]
        for row in store.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase()"
        ).rows
    }
    assert HISTORY_TABLES | {"schema_migrations"} <= tables
    recorded = store.query("SELECT name FROM schema_migrations FINAL ORDER BY version").rows
    assert [row[0] for row in recorded] == files


def test_second_migrate_applies_nothing_also_after_reopening(backend: Backend) -> None:
    first = backend.open()
    assert first.migrate()
    recorded = raw_count(first, "schema_migrations")

    assert first.migrate() == []
    first.close()
    assert backend.open().migrate() == []
    assert raw_count(backend.open(), "schema_migrations") == recorded


def test_tables_are_day_partitioned_with_ttl_from_settings(backend: Backend) -> None:
    retention = {"execution_events": 30, "alerts": 7}
    store = backend.open(retention_days=retention)
    store.migrate()

    definitions = dict(
        store.query(
            "SELECT name, engine_full FROM system.tables "
            "WHERE database = currentDatabase() AND name IN {tables:Array(String)}",
            {"tables": sorted(HISTORY_TABLES)},
        ).rows
    )
    assert set(definitions) == HISTORY_TABLES
    for table in HISTORY_TABLES:
        days = retention.get(table, DEFAULT_RETENTION_DAYS[table])
        engine_full = definitions[table]
        assert "ReplacingMergeTree" in engine_full, engine_full
        assert "PARTITION BY toYYYYMMDD(event_time)" in engine_full, engine_full
        assert f"TTL toDateTime(event_time) + toIntervalDay({days})" in engine_full, engine_full
        assert "non_replicated_deduplication_window = 1000" in engine_full, engine_full


# --- partitions and idempotence ---------------------------------------------------------


def test_execution_events_land_in_one_partition_per_day(store: Store) -> None:
    rows = make_events(executions=12, days=3)
    store.insert("execution_events", rows, dedup_token="executions.events/0/0-35")

    parts = store.query(
        "SELECT partition, sum(rows) FROM system.parts "
        "WHERE database = currentDatabase() AND table = 'execution_events' AND active "
        "GROUP BY partition ORDER BY partition"
    ).rows
    per_day = collections.Counter(row["event_time"].strftime("%Y%m%d") for row in rows)
    assert parts == sorted(per_day.items())
    assert len(parts) == 3


def test_same_batch_with_same_token_is_inserted_once(store: Store, backend: Backend) -> None:
    backend.stop_merges("execution_events")
    rows = make_events(executions=10, days=2)
    store.insert("execution_events", rows, dedup_token="executions.events/1/100-129")
    before = documented_answers(store)

    store.insert("execution_events", rows, dedup_token="executions.events/1/100-129")

    assert raw_count(store) == len(rows)  # the token dropped the repeat before it landed
    assert documented_answers(store) == before == expected_answers(rows)


def test_redelivery_cut_into_other_batches_changes_no_documented_answer(
    store: Store, backend: Backend
) -> None:
    backend.stop_merges("execution_events")
    first = make_events(executions=10, days=2)
    store.insert("execution_events", first, dedup_token="executions.events/2/0-29")
    # After a crash the sink re-reads from an older offset and batches differently: the same
    # events arrive again under new tokens, mixed with new ones.
    later = make_events(executions=4, days=2, offset=10)
    redelivered = first[12:] + later
    store.insert("execution_events", redelivered[:9], dedup_token="executions.events/2/12-20")
    store.insert("execution_events", redelivered[9:], dedup_token="executions.events/2/21-41")

    assert raw_count(store) == len(first) + len(redelivered)  # duplicates are physically there
    assert documented_answers(store) == expected_answers(first + later)


def test_query_binds_typed_parameters(store: Store) -> None:
    rows = make_events(executions=6, days=1)
    store.insert("execution_events", rows)

    result = store.query(
        "SELECT event_type, attempt, worker_id, scheduled_time FROM execution_events FINAL "
        "WHERE execution_id = {execution:String} ORDER BY event_time",
        {"execution": "exec-0003"},
    )
    mine = [row for row in rows if row["execution_id"] == "exec-0003"]
    assert result.columns == ("event_type", "attempt", "worker_id", "scheduled_time")
    assert result.rows == [
        (row["event_type"], row["attempt"], row["worker_id"], row["scheduled_time"]) for row in mine
    ]


def test_insert_refuses_rows_with_different_columns(store: Store) -> None:
    rows = make_events(executions=2, days=1)
    del rows[1]["worker_id"]
    with pytest.raises(HistoryStoreError, match="same columns"):
        store.insert("execution_events", rows)
    assert raw_count(store) == 0


# --- persistence ------------------------------------------------------------------------


def test_data_and_dedup_window_persist_after_close_and_reopen(backend: Backend) -> None:
    rows = make_events(executions=8, days=2)
    first = backend.open()
    first.migrate()
    first.insert("execution_events", rows, dedup_token="executions.events/0/0-23")
    before = documented_answers(first)
    first.close()

    again = backend.open()
    backend.stop_merges("execution_events")
    assert again.migrate() == []
    assert documented_answers(again) == before == expected_answers(rows)
    again.insert("execution_events", rows, dedup_token="executions.events/0/0-23")
    assert raw_count(again) == len(rows)


def test_factory_chooses_by_clickhouse_url(tmp_path: Path) -> None:
    settings = HistorySettings.from_env(
        {"TICKWHEEL_HISTORY_DIR": str(tmp_path / "h"), "CLICKHOUSE_URL": ""}
    )
    with open_history_store(settings) as store:
        assert isinstance(store, ChdbHistoryStore)
        assert store.directory == os.path.realpath(tmp_path / "h")
    if os.environ.get("CLICKHOUSE_URL"):
        server = HistorySettings.from_env({"CLICKHOUSE_URL": os.environ["CLICKHOUSE_URL"]})
        with open_history_store(server) as store:
            assert isinstance(store, ClickHouseServerHistoryStore)
