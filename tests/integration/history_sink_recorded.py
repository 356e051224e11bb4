"""The history sink's recorded history, for the tests that check it: one sink (in a thread of
this process, owning a fresh chDB directory, or writing to the server of `CLICKHOUSE_URL`)
consumes the scenario of `history_scenario.py` once per test module; the tests then read it
through the owner's endpoint, as the CLI does."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.integration.history_scenario import (
    WINDOW,
    Scenario,
    build_scenario,
    ms,
)
from tests.integration.history_sink_running import sink_in_thread, wait_caught_up
from tickwheel.adapters.clickhouse import HistorySettings
from tickwheel.history import (
    OwnerClient,
    open_history_reader,
)
from tickwheel.ports.history import QueryResult
from tickwheel.services.history.settings import HistorySinkSettings

RETENTION_DAYS = 30
# Every test runs on embedded chDB; with CLICKHOUSE_URL set, the same tests also run with the
# sink writing to that server (in a database of their own), except the ones about the
# embedded store's owner endpoint.
BACKENDS = ["chdb"] + (["server"] if os.environ.get("CLICKHOUSE_URL") else [])
EMBEDDED_ONLY = pytest.mark.parametrize("recorded", ["chdb"], indirect=True)


@contextlib.contextmanager
def history_location(backend: str, directory: Path) -> Iterator[HistorySettings]:
    retention = {"execution_events": RETENTION_DAYS}
    if backend == "chdb":
        yield HistorySettings(history_dir=directory, retention_days=retention)
        return
    import clickhouse_connect  # test set-up only: a database of the test's own

    url = os.environ["CLICKHOUSE_URL"]
    database = f"tickwheel_sink_{uuid.uuid4().hex[:12]}"
    admin = clickhouse_connect.get_client(dsn=url)
    admin.command(f"CREATE DATABASE {database}")
    parts = urlsplit(url)
    test_url = urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, ""))
    try:
        yield HistorySettings(clickhouse_url=test_url, retention_days=retention)
    finally:
        admin.command(f"DROP DATABASE IF EXISTS {database} SYNC")
        admin.close()


@pytest.fixture(scope="module", params=BACKENDS)
def recorded(
    request: pytest.FixtureRequest, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Scenario, Any, HistorySinkSettings]]:
    """The scenario published under a fresh topic prefix and recorded by one sink; the reader
    is what the CLI would get (the owner's endpoint when embedded)."""
    from tickwheel.adapters.kafka.admin import apply_topology

    with (
        pytest.MonkeyPatch.context() as env,
        history_location(request.param, tmp_path_factory.mktemp("sink") / "history") as where,
    ):
        env.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
        env.setenv("TICKWHEEL_TOPIC_PREFIX", f"t{uuid.uuid4().hex[:10]}.")
        apply_topology(bootstrap=kafka_bootstrap)
        scenario = build_scenario()
        scenario.publish(kafka_bootstrap)
        settings = HistorySinkSettings(
            instance="history-test",
            bootstrap=kafka_bootstrap,
            group_id=f"history-test-{uuid.uuid4().hex[:8]}",
            max_batch=25,
            max_wait_ms=100,
            history=where,
        )
        with sink_in_thread(settings):
            wait_caught_up(kafka_bootstrap, settings.group_id)
            reader = open_history_reader(settings.history)
            try:
                if settings.embedded:
                    assert isinstance(reader, OwnerClient), (
                        "an owned directory is read via its owner"
                    )
                yield scenario, reader, settings
            finally:
                reader.close()


def rows(reader: Any, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    result: QueryResult = reader.query(sql, params)
    return result.rows


def window() -> dict[str, str]:
    return {"since": WINDOW[0], "until": WINDOW[1]}


def window_ms() -> tuple[int, int]:
    return ms(dt.datetime.fromisoformat(WINDOW[0])), ms(dt.datetime.fromisoformat(WINDOW[1]))
