"""What a reader of the history store may do, against real ClickHouse (`history_store_backends.py`):
read-only statements only, refused in ClickHouse itself too; per-query caps from the settings
that a query cannot lift; and `tickwheel history sql`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.history_cli import run_cli
from tests.integration.history_store_backends import (
    Backend,
    Store,
    backend,
    make_events,
    raw_count,
    store,
)
from tickwheel.adapters.clickhouse import (
    HistorySettings,
    QueryLimits,
)
from tickwheel.adapters.clickhouse._limits import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_BYTES_VAR,
    MAX_ROWS_VAR,
    TIMEOUT_VAR,
)
from tickwheel.errors import TickwheelError
from tickwheel.ports.history import (
    HistoryQueryError,
    HistoryQueryRejected,
)

pytestmark = pytest.mark.integration
__all__ = ["backend", "store"]  # fixtures, imported for pytest to find


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


# --- CLI --------------------------------------------------------------------------------


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
