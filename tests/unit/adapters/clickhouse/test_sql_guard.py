"""The read-only statement check (`check_read_only`), without ClickHouse.

What the engine would do with each refused text is checked against real chDB in
tests/integration/test_history_store.py (REFUSED); here the lexer's rules are pinned one by
one, including the escaped identifiers ClickHouse decodes to `file`, `url` or `Python`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.adapters.clickhouse import check_read_only
from tickwheel.ports.history import HistoryQueryRejected

ACCEPTED = [
    "SELECT 1",
    "select count() FROM execution_events FINAL",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "SHOW TABLES",
    "DESCRIBE TABLE execution_events",
    "EXPLAIN SELECT 1",
    "EXISTS TABLE alerts",
    "(SELECT 1)",
    'SELECT "event_id" FROM `execution_events`',
    'SELECT 1 AS "a""b"',
    "SELECT 'it''s', 'back\\'slash' FROM alerts",
    "SELECT * FROM execution_events WHERE execution_id = {id:String}",
    "SELECT toStartOfDay(event_time), lower(job_id) FROM execution_events",
    "SELECT 1 -- file('x')",
    "SELECT 1 /* url('x') /* nested */ */",
    # a column whose name merely starts like a forbidden function is no call
    "SELECT filename FROM t",
    "SELECT * FROM {table:Identifier}",
]

REFUSED = [
    # escaped identifiers that ClickHouse decodes to forbidden names (B10)
    ("SELECT * FROM `f\\x69le`('/etc/passwd', 'LineAsString')", "backslash"),
    ("SELECT * FROM \"\\x75rl\"('http://169.254.169.254/')", "backslash"),
    ('SELECT "Pyth\\Non"(1)', "backslash"),
    ("DESCRIBE TABLE `f\\x69le`('x')", "backslash"),
    ("SELECT 1 AS `a\\tb`", "backslash"),
    # quoted names followed by ( are calls, vetted like bare ones
    ("SELECT * FROM `file`('/etc/hostname', 'LineAsString')", "file()"),
    ("SELECT * FROM \"URL\"('http://x/')", "URL()"),
    ("SELECT `python`(1)", "python()"),
    ("SELECT * FROM `remote` ('h', db, t)", "remote()"),
    ("SELECT * FROM file /* gap */ ('x')", "file()"),
    ("SELECT * FROM s3Cluster('c', 'u')", "s3Cluster()"),
    ("SELECT * FROM system.`url`('x')", "url()"),
    # the statement kinds and writes
    ("INSERT INTO alerts VALUES (1)", "INSERT"),
    ("SELECT 1 INTO OUTFILE 'x'", "OUTFILE"),
    ("DROP TABLE alerts", "DROP"),
    ("SET readonly = 0", "SET"),
    ("SELECT 1; SELECT 2", "2 statements"),
    ("", "empty"),
    ("SELECT $$x$$", "heredoc"),
    ("SELECT 'unterminated", "unterminated"),
    ("SELECT 1 /* unterminated", "unterminated"),
    ("SELECT 1 #x", "'#'"),
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_read_only_statements_are_accepted(sql: str) -> None:
    check_read_only(sql)


@pytest.mark.parametrize(("sql", "reason"), REFUSED)
def test_refused_statements_name_the_reason(sql: str, reason: str) -> None:
    with pytest.raises(HistoryQueryRejected) as caught:
        check_read_only(sql)
    assert reason in caught.value.reason
    assert isinstance(caught.value, PermissionError)


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT {f:Identifier}('/etc/passwd')", {"f": "file"}),
        ("SELECT * FROM {f:Identifier}('x')", {"f": "URL"}),
        ("SELECT { f : Identifier } (1)", {"f": "Python"}),
        ("SELECT {f:identifier}(1)", {"f": "db.remote"}),
        # a name that cannot be vetted because it is not given
        ("SELECT {f:Identifier}(1)", {}),
        # a value ClickHouse might decode or requote
        ("SELECT * FROM {t:Identifier}", {"t": "f\\x69le"}),
        ("SELECT * FROM {t:Identifier}", {"t": "a`b"}),
        ("SELECT * FROM {t:Identifier}", {"t": 3}),
    ],
)
def test_identifier_parameters_are_vetted_as_the_names_they_become(
    sql: str, params: dict[str, Any]
) -> None:
    with pytest.raises(HistoryQueryRejected, match=r"Identifier|outside"):
        check_read_only(sql, params)


def test_identifier_parameters_naming_ordinary_things_pass() -> None:
    check_read_only("SELECT {f:Identifier}(1)", {"f": "abs"})
    check_read_only("SELECT * FROM {t:Identifier}", {"t": "execution_events"})
    # only Identifier placeholders name things; a String's value is data
    check_read_only("SELECT {s:String}", {"s": "file('/etc/passwd')"})
