"""The workflow history queries as files and as a CLI verb, without a store or a broker."""

from __future__ import annotations

import pytest

from tests.integration.history_cli import run_cli
from tickwheel.history import WORKFLOW_QUERIES, analyst_queries
from tickwheel.history._workflows import EARLIEST_MS, LATEST_MS, iso_ms

#: What each query binds (a wrong name would fail only at run time, with a store).
PARAMS = {
    "workflow_timeline": {"workflow_id"},
    "workflow_open_steps": {"as_of"},
    "workflow_step_stats": {"since", "until"},
    "workflow_approvals": {"since", "until"},
    "workflow_compensations": {"since", "until"},
}


def test_every_workflow_query_is_a_documented_query_with_its_parameters() -> None:
    queries = analyst_queries()
    assert set(WORKFLOW_QUERIES) == set(PARAMS) <= set(queries)
    for name, wanted in PARAMS.items():
        query = queries[name]
        assert set(query.params) == wanted, name
        # Every parameter is explained in the header, and every one reads FINAL.
        assert set(query.param_docs) == wanted, name
        assert "workflow_events FINAL" in query.sql, name


def test_the_default_window_is_all_that_clickhouse_stores() -> None:
    assert iso_ms(EARLIEST_MS) == "1900-01-01T00:00:00+00:00"
    assert iso_ms(LATEST_MS) == "2300-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["steps", "--since", "yesterday"], "--since"),
        (["approvals", "--until", "2026-01-01T00:00:00"], "--until"),  # no offset
        (["open", "--as-of", "soon"], "--as-of"),
    ],
)
def test_a_bad_instant_is_refused_in_one_line_before_the_store_is_opened(
    argv: list[str], flag: str, tmp_path: object
) -> None:
    missing = ["--history-dir", f"{tmp_path}/no-such-store"]
    code, out, err = run_cli(["history", "workflows", *argv, *missing])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and flag in err and "no embedded history store" not in err
