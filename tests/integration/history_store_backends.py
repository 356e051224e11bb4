"""The history store's contract tests' backends and data: each test runs against real ClickHouse.

Every contract test runs against embedded chDB in a temporary directory. To run the same
tests against a ClickHouse server as well, point `CLICKHOUSE_URL` at it; each test then also
runs against the server, in a database of its own that the test creates and drops (the URL's
user needs CREATE/DROP DATABASE):

    CLICKHOUSE_URL=http://default:@localhost:8123/default \\
        .venv/bin/pytest -m integration tests/integration/test_history_store*.py

Without `CLICKHOUSE_URL` the server backend is not part of the parametrisation at all (no
skipped tests). Tests named `test_embedded_*` are about chDB's one-owner directory and run
on chDB only.
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tickwheel.adapters.clickhouse import (
    ChdbHistoryStore,
    ClickHouseServerHistoryStore,
)
from tickwheel.ports.history import (
    HistoryStore,
)

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
