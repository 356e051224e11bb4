"""The statements of the fast path's insert (decision 0123, `adapters/clickhouse/_writes.py`):
what the store sends to a ClickHouse server (the records as the request's body, read with
`input()`) and to embedded chDB (a spooled file read with `file()`), and the names and
tokens it refuses to write into a statement. The statements themselves run against real
chDB in `tests/integration/test_history_columnar.py`; no ClickHouse server is reachable
here, so the server's call is checked for its shape."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tickwheel.adapters.clickhouse._writes import (
    encoded_statement,
    insert_encoded_body,
    insert_encoded_file,
    insert_encoded_files,
)
from tickwheel.ports.history import HistoryStoreError


class RecordingClient:
    """Stands in for the clickhouse-connect client in a unit test: keeps each command."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, Any]] = []
        self.spooled: list[bytes] = []

    def command(self, cmd: str, data: Any = None) -> None:
        self.commands.append((cmd, data))
        for part in cmd.split(" FROM file('")[1:]:
            with open(part.split("'", 1)[0], "rb") as spool:
                self.spooled.append(spool.read())


COLUMNS = ("event_id", "source_offset")
SELECT = "event_id, tw_source_offset"
STRUCTURE = "event_id String, tw_source_offset Int64"


def test_a_server_gets_the_records_as_the_body_read_with_input() -> None:
    client = RecordingClient()
    insert_encoded_body(client, "execution_events", COLUMNS, SELECT, STRUCTURE,  # type: ignore[arg-type]
                        b"Obj\x01...", "Avro", "tickwheel-history:execution_events:avro:ab12")  # fmt: skip
    [(statement, data)] = client.commands
    assert data == b"Obj\x01..."
    assert statement == (
        "INSERT INTO execution_events (event_id, source_offset) SETTINGS async_insert = 0, "
        "optimize_on_insert = 0, insert_deduplication_token = 'tickwheel-history:execution_events:avro:ab12' "
        "SELECT event_id, tw_source_offset "
        "FROM input('event_id String, tw_source_offset Int64') FORMAT Avro"
    )


def test_embedded_chdb_reads_a_spooled_file_that_lives_for_the_statement_only() -> None:
    client = RecordingClient()
    insert_encoded_file(client, "execution_events", COLUMNS, SELECT, STRUCTURE,  # type: ignore[arg-type]
                        b"records", "Avro", None)  # fmt: skip
    [(statement, data)] = client.commands
    assert data is None and client.spooled == [b"records"]
    assert statement.startswith(
        "INSERT INTO execution_events (event_id, source_offset) SETTINGS async_insert = 0, "
        "optimize_on_insert = 0 SELECT event_id, tw_source_offset FROM file('"
    )
    assert statement.endswith("', 'Avro', 'event_id String, tw_source_offset Int64')")
    path = statement.split(" FROM file('", 1)[1].split("'", 1)[0]
    assert not os.path.exists(path)


def test_several_kinds_into_one_table_are_one_statement_over_their_spooled_files() -> None:
    client = RecordingClient()
    insert_encoded_files(client, "execution_events", COLUMNS,  # type: ignore[arg-type]
                         [(SELECT, STRUCTURE, b"events"), ("event_id, 7", "event_id String",
                                                           b"requests")],
                         "Avro", "tickwheel-history:execution_events:avro:cd34")  # fmt: skip
    [(statement, data)] = client.commands
    assert data is None and client.spooled == [b"events", b"requests"]
    head, tail = statement.split(" UNION ALL ")
    assert head.startswith(
        "INSERT INTO execution_events (event_id, source_offset) SETTINGS async_insert = 0, "
        "optimize_on_insert = 0, insert_deduplication_token = "
        "'tickwheel-history:execution_events:avro:cd34' SELECT event_id, tw_source_offset "
        "FROM file('"
    )
    assert tail.startswith("SELECT event_id, 7 FROM file('")
    assert tail.endswith("', 'Avro', 'event_id String')")
    paths = [part.split("'", 1)[0] for part in statement.split(" FROM file('")[1:]]
    assert len(set(paths)) == 2 and not any(os.path.exists(path) for path in paths)


@pytest.mark.parametrize(
    ("table", "columns", "token", "named"),
    [
        ("events; DROP TABLE x", COLUMNS, None, "not a table name"),
        ("execution_events", ("event_id", "x) SELECT 1 --"), None, "not a column name"),
        ("execution_events", COLUMNS, "it's", "not a deduplication token"),
    ],
)
def test_names_and_tokens_that_could_escape_the_statement_are_refused(
    table: str, columns: tuple[str, ...], token: str | None, named: str
) -> None:
    with pytest.raises(HistoryStoreError, match=named):
        encoded_statement(table, columns, SELECT, "input('a String')", token)
