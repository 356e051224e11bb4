"""Contract tests of the history store against real ClickHouse.

Every contract test runs against embedded chDB in a temporary directory. To run the same
tests against a ClickHouse server as well, point `CLICKHOUSE_URL` at it; each test then also
runs against the server, in a database of its own that the test creates and drops (the URL's
user needs CREATE/DROP DATABASE):

    CLICKHOUSE_URL=http://default:@localhost:8123/default \\
        .venv/bin/pytest -m integration tests/integration/test_history_store.py

Without `CLICKHOUSE_URL` the server backend is not part of the parametrisation at all (no
skipped tests). Tests named `test_embedded_*` are about chDB's one-owner directory and run
on chDB only.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tickwheel.adapters.clickhouse import (
    DEFAULT_RETENTION_DAYS,
    ChdbHistoryStore,
    ClickHouseServerHistoryStore,
    HistorySettings,
    QueryLimits,
    open_history_store,
)
from tickwheel.adapters.clickhouse._limits import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_BYTES_VAR,
    MAX_ROWS_VAR,
    TIMEOUT_VAR,
)
from tickwheel.adapters.clickhouse._migrations import default_topology_dir
from tickwheel.cli import history as history_cli
from tickwheel.errors import TickwheelError
from tickwheel.ports.history import (
    HistoryQueryError,
    HistoryQueryRejected,
    HistoryStore,
    HistoryStoreBusy,
    HistoryStoreError,
)

pytestmark = pytest.mark.integration

Store = ChdbHistoryStore | ClickHouseServerHistoryStore
HISTORY_TABLES = {
    "execution_events",
    "job_definitions",
    "workflow_events",
    "alerts",
    "dead_letters",
    "calendar_events",
}
BACKENDS = ["chdb"] + (["server"] if os.environ.get("CLICKHOUSE_URL") else [])
UTC = dt.UTC
# Fixed days far enough ahead that no table's TTL has expired them, whatever day this runs.
DAY0 = dt.datetime(2099, 3, 1, tzinfo=UTC)


@dataclass
class Backend:
    """Opens stores on one location (a chDB directory, or a server database)."""

    name: str
    opener: Callable[..., Store]
    cli_args: list[str]
    admin_client: Callable[[], Any]
    opened: list[Store] = field(default_factory=list)
    admins: list[Any] = field(default_factory=list)

    def open(self, **kwargs: Any) -> Store:
        store = self.opener(**kwargs)
        self.opened.append(store)
        return store

    def stop_merges(self, table: str) -> None:
        """Hold background merges, so duplicates stay physically present while a test looks.

        Goes through a plain clickhouse-connect client: test set-up, not the store's API.
        """
        admin = self.admin_client()
        self.admins.append(admin)
        admin.command(f"SYSTEM STOP MERGES {table}")

    def close_all(self) -> None:
        for store in self.opened:
            store.close()
        for admin in self.admins:
            admin.close()


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    import clickhouse_connect  # test set-up only: the test's own database, merges on hold

    if request.param == "chdb":
        directory = tmp_path / "history"
        chosen = Backend(
            "chdb",
            lambda **kw: ChdbHistoryStore(directory, **kw),
            ["--history-dir", str(directory)],
            lambda: clickhouse_connect.get_client(interface="chdb", path=str(directory)),
        )
        yield chosen
        chosen.close_all()
        return
    url = os.environ["CLICKHOUSE_URL"]
    database = f"tickwheel_test_{uuid.uuid4().hex[:12]}"
    admin = clickhouse_connect.get_client(dsn=url)
    admin.command(f"CREATE DATABASE {database}")
    test_url = _with_database(url, database)
    chosen = Backend(
        "server",
        lambda **kw: ClickHouseServerHistoryStore(test_url, **kw),
        ["--clickhouse-url", test_url],
        lambda: clickhouse_connect.get_client(dsn=test_url),
    )
    try:
        yield chosen
    finally:
        chosen.close_all()
        admin.command(f"DROP DATABASE IF EXISTS {database} SYNC")
        admin.close()


@pytest.fixture
def store(backend: Backend) -> Store:
    opened = backend.open()
    opened.migrate()
    return opened


def make_events(executions: int, days: int, *, offset: int = 0) -> list[dict[str, Any]]:
    """A requested → leased → succeeded life per execution, executions spread over `days`."""
    rows: list[dict[str, Any]] = []
    for n in range(offset, offset + executions):
        slot = DAY0 + dt.timedelta(days=n % days, hours=n % 24, minutes=n % 60)
        fire = slot + dt.timedelta(seconds=7)
        execution_id = f"exec-{n:04d}"
        for step, (event_type, worker) in enumerate(
            [("requested", None), ("leased", "worker-1"), ("succeeded", "worker-1")]
        ):
            rows.append(
                {
                    "event_id": f"{execution_id}-{step}",
                    "event_time": fire + dt.timedelta(seconds=step),
                    "event_type": event_type,
                    "job_id": f"job-{n % 5}",
                    "job_type": "noop",
                    "tenant_id": f"tenant-{n % 2}",
                    "execution_id": execution_id,
                    "attempt": 1,
                    "scheduled_time": slot,
                    "fire_time": fire,
                    "worker_id": worker,
                    "source_topic": "executions.events",
                    "source_partition": n % 3,
                    "source_offset": n * 3 + step,
                }
            )
    return rows


# The documented analyst answers (docs/history.md) that a redelivered batch must not change.
DOCUMENTED_QUERIES = {
    "events_per_execution": (
        "SELECT execution_id, count() AS events FROM execution_events FINAL "
        "GROUP BY execution_id ORDER BY execution_id"
    ),
    "events_per_type": (
        "SELECT event_type, count() AS events FROM execution_events FINAL "
        "GROUP BY event_type ORDER BY event_type"
    ),
    "executions": "SELECT uniqExact(execution_id) AS executions FROM execution_events",
    "events": "SELECT uniqExact(event_id) AS events FROM execution_events",
}


def documented_answers(store: HistoryStore) -> dict[str, list[tuple[Any, ...]]]:
    return {name: store.query(sql).rows for name, sql in DOCUMENTED_QUERIES.items()}


def expected_answers(rows: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
    """The same answers computed from the events themselves, each event counted once."""
    unique = {row["event_id"]: row for row in rows}.values()
    per_execution = collections.Counter(row["execution_id"] for row in unique)
    per_type = collections.Counter(row["event_type"] for row in unique)
    return {
        "events_per_execution": sorted(per_execution.items()),
        "events_per_type": sorted(per_type.items()),
        "executions": [(len(per_execution),)],
        "events": [(sum(per_execution.values()),)],
    }


def raw_count(store: HistoryStore, table: str = "execution_events") -> int:
    """Physical rows, duplicates included (no FINAL)."""
    return int(store.query(f"SELECT count() FROM {table}").scalar())


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


# --- read-only queries ------------------------------------------------------------------

REFUSED = [
    "INSERT INTO execution_events (event_id) VALUES ('x')",
    "DROP TABLE execution_events",
    "TRUNCATE TABLE execution_events",
    "ALTER TABLE execution_events DELETE WHERE 1",
    "CREATE TABLE t (a UInt8) ENGINE = Memory",
    "OPTIMIZE TABLE execution_events FINAL",
    "SET readonly = 0",
    "SELECT 1; DROP TABLE execution_events",
    "SELECT 1 /* ; */ ; DROP TABLE execution_events",
    "SELECT '; ' ; DROP TABLE execution_events",
    "SELECT 1 /* /* */ ' */ ; DROP TABLE execution_events; '",
    "SELECT $$x$$",
    "INSERT INTO FUNCTION file('{out}', 'CSV') SELECT 1",
    "SELECT 1 INTO OUTFILE '{out}'",
    "SELECT * FROM file('/etc/hostname', 'LineAsString')",
    "SELECT * FROM `url`('http://127.0.0.1:9/', 'CSV', 'a String')",
    "SELECT * FROM Python(secret)",
    # escaped quoted identifiers ClickHouse decodes to file / url / Python (B10)
    "SELECT * FROM `f\\x69le`('/etc/passwd','LineAsString')",
    "SELECT * FROM \"\\x75rl\"('http://169.254.169.254/')",
    'SELECT "Pyth\\Non"(1)',
    "DESCRIBE TABLE `f\\x69le`('/etc/hostname', 'LineAsString')",
    "SELECT * FROM `file` /* gap */ ('/etc/hostname', 'LineAsString')",
    # the caps cannot be lifted by the query itself (B20)
    "SELECT * FROM numbers(10) SETTINGS max_result_rows = 0",
    "SELECT * FROM numbers(10) SETTINGS readonly = 0",
]


@pytest.mark.parametrize("statement", REFUSED)
def test_writes_ddl_and_outside_access_are_refused(
    store: Store, statement: str, tmp_path: Path
) -> None:
    store.insert("execution_events", make_events(executions=1, days=1))
    out = tmp_path / "out.csv"

    with pytest.raises(HistoryQueryRejected):
        store.query(statement.replace("{out}", str(out)))

    assert raw_count(store) == 3
    assert not out.exists()


def test_reader_session_is_readonly_in_clickhouse_itself(store: Store) -> None:
    # The statement check is the second line; the engine refuses writes on its own.
    assert int(store.query("SELECT getSetting('readonly')").scalar()) >= 1


# --- per-query caps (B20) ---------------------------------------------------------------


def test_a_query_returning_too_many_rows_stops_fast_with_the_cap_named(store: Store) -> None:
    started = time.monotonic()
    with pytest.raises(HistoryQueryError, match=MAX_ROWS_VAR):
        store.query("SELECT * FROM numbers(100000000)")
    # Stopped at the first blocks past the cap, not after materialising 10^8 rows.
    assert time.monotonic() - started < 5
    # The cap is a bound on the answer, not on what a query may read: aggregates still work.
    # (And the next query gets its own answer, not the rest of the failed one's: chDB would
    # hand it the leftover blocks if the store did not resynchronise its reader.)
    assert store.query("SELECT count() FROM numbers(1000000)").scalar() == 1_000_000
    with pytest.raises(HistoryQueryError, match="throwIf"):
        store.query("SELECT throwIf(number = 90000) FROM numbers(99000)")
    assert store.query("SELECT 42").scalar() == 42


def test_a_query_cannot_lift_its_own_caps(store: Store) -> None:
    for statement in (
        "SELECT * FROM numbers(100000000) SETTINGS max_result_rows = 0",
        "SELECT * FROM numbers(100000000) SETTINGS result_overflow_mode = 'break'",
        "SELECT count() FROM numbers_mt(1000000000000) SETTINGS max_execution_time = 0",
    ):
        with pytest.raises(HistoryQueryRejected, match="readonly"):
            store.query(statement)
    # A SETTINGS clause inside a subquery does not lift the outer cap either.
    with pytest.raises(HistoryQueryError, match=MAX_ROWS_VAR):
        store.query("SELECT * FROM (SELECT * FROM numbers(100000000) SETTINGS max_result_rows=0)")
    limits = store.query(
        "SELECT getSetting('max_result_rows'), getSetting('result_overflow_mode'), "
        "getSetting('max_execution_time')"
    ).rows[0]
    assert (int(limits[0]), limits[1], float(limits[2])) == (
        DEFAULT_MAX_ROWS,
        "throw",
        float(DEFAULT_TIMEOUT_S),
    )


def test_caps_come_from_the_settings_and_bound_the_time_of_a_query(backend: Backend) -> None:
    settings = HistorySettings.from_env(
        {MAX_ROWS_VAR: "2500", TIMEOUT_VAR: "1", MAX_BYTES_VAR: "1000000"}
    )
    store = backend.open(limits=settings.query_limits)
    store.migrate()
    # The writer is not capped: a batch larger than the reader's row cap lands whole.
    rows = make_events(executions=1000, days=1)
    store.insert("execution_events", rows)
    assert raw_count(store) == 3000
    with pytest.raises(HistoryQueryError, match="2500 rows"):
        store.query("SELECT event_id FROM execution_events")
    assert len(store.query("SELECT event_id FROM execution_events LIMIT 2500").rows) == 2500

    started = time.monotonic()
    with pytest.raises(HistoryQueryError, match=TIMEOUT_VAR):
        store.query("SELECT sum(cityHash64(number)) FROM numbers_mt(1000000000000)")
    assert time.monotonic() - started < 5

    with pytest.raises(HistoryQueryError, match=MAX_BYTES_VAR):
        store.query("SELECT repeat(toString(number), 1000) FROM numbers(2000)")


def test_query_caps_must_be_positive_numbers() -> None:
    with pytest.raises(TickwheelError, match=MAX_ROWS_VAR):
        HistorySettings.from_env({MAX_ROWS_VAR: "lots"})
    with pytest.raises(TickwheelError, match=TIMEOUT_VAR):
        HistorySettings.from_env({TIMEOUT_VAR: "0"})
    assert HistorySettings.from_env({}).query_limits == QueryLimits()


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


# --- embedded ownership (chDB only) -----------------------------------------------------


def test_embedded_two_stores_on_one_directory_share_it(tmp_path: Path) -> None:
    with ChdbHistoryStore(tmp_path / "h") as writer, ChdbHistoryStore(tmp_path / "h") as reader:
        writer.migrate()
        rows = make_events(executions=3, days=1)
        writer.insert("execution_events", rows)
        assert documented_answers(reader) == expected_answers(rows)


def test_embedded_second_directory_in_one_process_is_busy(tmp_path: Path) -> None:
    with ChdbHistoryStore(tmp_path / "a"), pytest.raises(HistoryStoreBusy, match="one directory"):
        ChdbHistoryStore(tmp_path / "b")
    # Once the first is closed, the other directory opens.
    ChdbHistoryStore(tmp_path / "b").close()


def test_embedded_directory_owned_by_another_process_is_refused_then_freed_by_its_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "owned"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tickwheel.adapters.clickhouse import ChdbHistoryStore\n"
            "s = ChdbHistoryStore(sys.argv[1]); s.migrate(); print('ready', flush=True)\n"
            "sys.stdin.read()",
            str(directory),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "ready"

        with pytest.raises(HistoryStoreBusy) as busy:
            ChdbHistoryStore(directory)
        assert busy.value.owner_pid == owner.pid
        assert f"process {owner.pid}" in str(busy.value)

        # The CLI says the same, through main's TickwheelError handling (exit 2).
        monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
        code, _, err = run_cli(["history", "sql", "SELECT 1", "--history-dir", str(directory)])
        assert code == 2
        assert f"process {owner.pid}" in err
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)

    # A killed owner leaves no stale lock: the directory opens, with its data.
    with ChdbHistoryStore(directory) as reopened:
        assert reopened.migrate() == []


# --- CLI --------------------------------------------------------------------------------


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Drive `tickwheel history ...` in-process through the real parser and error handling."""
    parser = argparse.ArgumentParser(prog="tickwheel")
    history_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            code = int(args.handler(args))
        except TickwheelError as exc:  # what tickwheel.cli.main does with it
            print(f"tickwheel: error: {exc}", file=sys.stderr)
            code = 2
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    return code, out.getvalue(), err.getvalue()


def test_cli_history_sql_prints_json_rows_and_a_table(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    writer = backend.open()
    writer.migrate()
    rows = make_events(executions=4, days=2)
    writer.insert("execution_events", rows)
    sql = (
        "SELECT execution_id, count() AS events, min(scheduled_time) AS scheduled "
        "FROM execution_events FINAL WHERE tenant_id = {tenant:String} "
        "GROUP BY execution_id ORDER BY execution_id"
    )

    code, out, _ = run_cli(
        ["history", "sql", sql, "--json", "--param", "tenant=tenant-0", *backend.cli_args]
    )
    assert code == 0
    mine = [row for row in rows if row["tenant_id"] == "tenant-0"]
    expected = [
        {
            "execution_id": execution_id,
            "events": sum(1 for row in mine if row["execution_id"] == execution_id),
            "scheduled": min(
                row["scheduled_time"] for row in mine if row["execution_id"] == execution_id
            ).isoformat(),
        }
        for execution_id in sorted({row["execution_id"] for row in mine})
    ]
    assert json.loads(out) == expected

    code, out, _ = run_cli(["history", "sql", sql, "--param", "tenant=tenant-0", *backend.cli_args])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["execution_id", "events", "scheduled"]
    assert lines[-1] == f"({len(expected)} rows)"
    assert [line.split()[0] for line in lines[2:-1]] == [e["execution_id"] for e in expected]


def test_cli_refuses_a_write_with_exit_2(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    backend.open().migrate()
    code, out, err = run_cli(["history", "sql", "DROP TABLE execution_events", *backend.cli_args])
    assert (code, out) == (2, "")
    assert "read-only" in err


def test_cli_embedded_without_history_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    missing = tmp_path / "nothing-here"
    code, _, err = run_cli(["history", "sql", "SELECT 1", "--history-dir", str(missing)])
    assert code == 2
    assert "no embedded history store" in err
    assert not missing.exists()


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


# --- one row per execution: execution_outcomes (issue 16 item 13) -----------------------


def _event(
    execution: str, event_type: str, attempt: int, event_id: str, minute: int, **extra: Any
) -> dict[str, Any]:
    slot = DAY0 + dt.timedelta(hours=1)
    return {
        "event_id": event_id,
        "event_time": slot + dt.timedelta(minutes=minute),
        "event_type": event_type,
        "job_id": f"job-{execution}",
        "job_type": "noop",
        "tenant_id": "tenant-1",
        "execution_id": execution,
        "attempt": attempt,
        "scheduled_time": slot,
        "fire_time": slot,
        "worker_id": extra.pop("worker_id", None),
        "error": extra.pop("error", None),
        "source_topic": "executions.events",
        "source_partition": 0,
        "source_offset": minute,
        **extra,
    }


def _fenced(event: dict[str, Any], minute: int) -> dict[str, Any]:
    """What the timer records for a write it did not apply (services/timer/executions.py)."""
    return {
        **event,
        "event_id": f"timer:fenced:{event['event_id']}",
        "event_type": "fenced",
        "event_time": DAY0 + dt.timedelta(hours=1, minutes=minute),
        "source_offset": 1000 + minute,
    }


def fencing_history() -> list[dict[str, Any]]:
    """Five executions whose raw `succeeded` rows overstate what happened."""
    rows: list[dict[str, Any]] = []
    # A: attempt 1's lease expired, attempt 2 succeeded, then attempt 1's worker reported
    # success too (stale, fenced).
    stale_a = _event("A", "succeeded", 1, "succeeded:A:1:w1:u", 9, worker_id="w1")
    rows += [
        _event("A", "requested", 1, "timer:requested:A:1", 0),
        _event("A", "leased", 1, "leased:A:1:w1:u", 1, worker_id="w1"),
        _event("A", "failed", 1, "timer:failed:A:1", 3, error="lease of worker w1 expired"),
        _event("A", "requested", 2, "timer:requested:A:2", 3),
        _event("A", "leased", 2, "leased:A:2:w2:u", 4, worker_id="w2"),
        _event("A", "succeeded", 2, "succeeded:A:2:w2:u", 5, worker_id="w2"),
        stale_a,
        _fenced(stale_a, 10),
    ]
    # B: a redelivered request ran attempt 1 on a second worker; the first lease stands, so
    # only w2's lease and success are fenced and w1's success is the accepted outcome.
    second_lease = _event("B", "leased", 1, "leased:B:1:w2:u", 2, worker_id="w2")
    second_success = _event("B", "succeeded", 1, "succeeded:B:1:w2:u", 4, worker_id="w2")
    rows += [
        _event("B", "requested", 1, "timer:requested:B:1", 0),
        _event("B", "leased", 1, "leased:B:1:w1:u", 1, worker_id="w1"),
        second_lease,
        _fenced(second_lease, 3),
        _event("B", "succeeded", 1, "succeeded:B:1:w1:u", 3, worker_id="w1"),
        second_success,
        _fenced(second_success, 5),
    ]
    # C: a permanent failure, dead-lettered.
    rows += [
        _event("C", "requested", 1, "timer:requested:C:1", 0),
        _event("C", "leased", 1, "leased:C:1:w1:u", 1, worker_id="w1"),
        _event("C", "failed", 1, "failed:C:1:w1:u", 2, worker_id="w1", error="boom"),
        _event("C", "dead_lettered", 1, "timer:dead_lettered:C:1", 2, error="boom"),
    ]
    # D: still running.
    rows += [
        _event("D", "requested", 1, "timer:requested:D:1", 0),
        _event("D", "leased", 1, "leased:D:1:w1:u", 1, worker_id="w1"),
    ]
    # E: attempt 1 expired and attempt 2 waits in the queue; attempt 1's late success is
    # fenced, so the execution is open, not succeeded.
    stale_e = _event("E", "succeeded", 1, "succeeded:E:1:w1:u", 6, worker_id="w1")
    rows += [
        _event("E", "requested", 1, "timer:requested:E:1", 0),
        _event("E", "leased", 1, "leased:E:1:w1:u", 1, worker_id="w1"),
        _event("E", "failed", 1, "timer:failed:E:1", 3, error="lease expired"),
        _event("E", "requested", 2, "timer:requested:E:2", 3),
        stale_e,
        _fenced(stale_e, 7),
    ]
    # a skipped occurrence is no execution
    rows.append(_event("F", "skipped", 0, "timer:skipped:F:0", 0))
    return rows


OUTCOMES_SQL = (
    "SELECT execution_id, outcome, outcome_attempt, outcome_worker_id, attempts, "
    "failed_attempts, fenced_writes FROM execution_outcomes ORDER BY execution_id"
)
EXPECTED_OUTCOMES = [
    ("A", "succeeded", 2, "w2", 2, 1, 1),
    ("B", "succeeded", 1, "w1", 1, 0, 2),
    ("C", "dead_lettered", 1, None, 1, 1, 0),
    ("D", "open", 0, None, 1, 0, 0),
    ("E", "open", 0, None, 2, 1, 1),
]


def test_execution_outcomes_count_a_fenced_success_once(store: Store) -> None:
    store.insert("execution_events", fencing_history())

    # The trap the view exists for: raw success events overstate the successes.
    raw = store.query(
        "SELECT uniqExact(event_id) FROM execution_events FINAL WHERE event_type = 'succeeded'"
    ).scalar()
    assert raw == 5
    assert store.query(OUTCOMES_SQL).rows == EXPECTED_OUTCOMES
    per_outcome = store.query(
        "SELECT outcome, count() FROM execution_outcomes GROUP BY outcome ORDER BY outcome"
    ).rows
    assert per_outcome == [("dead_lettered", 1), ("open", 2), ("succeeded", 2)]
    assert (
        store.query("SELECT last_error FROM execution_outcomes WHERE execution_id = 'C'").scalar()
        == "boom"
    )


def test_execution_outcomes_do_not_double_count_a_redelivered_batch(
    store: Store, backend: Backend
) -> None:
    backend.stop_merges("execution_events")
    history = fencing_history()
    store.insert("execution_events", history, dedup_token="executions.events/0/0-40")
    # Redelivered after a crash, cut differently and under other tokens: physical copies.
    store.insert("execution_events", history[5:20], dedup_token="executions.events/0/5-19")
    store.insert("execution_events", history[15:], dedup_token="executions.events/0/15-40")
    assert raw_count(store) > len(history)

    assert store.query(OUTCOMES_SQL).rows == EXPECTED_OUTCOMES
    assert (
        store.query("SELECT countIf(outcome = 'succeeded') FROM execution_outcomes").scalar() == 2
    )


# --- dead letters keep the bad record's own place (issue 16 item 14) --------------------


def test_a_dead_letter_keeps_the_bad_records_topic_partition_and_offset(store: Store) -> None:
    from tickwheel.services.history.rows import Source, dead_letter_row

    read_at = Source("executions.dlq", 1, 500, 0)
    undecodable = dead_letter_row(
        {"dead_letter_id": "random-1", "event_time": 4_070_908_800_000,
         "reason": "undecodable: bad magic", "source_topic": "jobs.definitions",
         "source_partition": 2, "source_offset": 17, "raw_value": b"\xff"},
        read_at,
    )  # fmt: skip
    exhausted = dead_letter_row(
        {"dead_letter_id": "dlq:exec-9", "event_time": 4_070_908_800_000,
         "reason": "max_attempts_exhausted", "source_topic": "executions.normal",
         "source_partition": -1, "source_offset": -1, "execution_id": "exec-9",
         "job_id": "job-9", "attempt": 3, "error": "boom", "payload": "{}"},
        Source("executions.dlq", 1, 501, 0),
    )  # fmt: skip
    store.insert("dead_letters", [undecodable, exhausted])

    rows = store.query(
        "SELECT event_id, record_topic, record_partition, record_offset, source_topic, "
        "source_offset FROM dead_letters FINAL ORDER BY source_offset"
    ).rows
    assert rows == [
        ("undecodable:jobs.definitions/2/17", "jobs.definitions", 2, 17, "executions.dlq", 500),
        ("dlq:exec-9", "executions.normal", None, None, "executions.dlq", 501),
    ]
