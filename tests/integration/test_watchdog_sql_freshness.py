"""`output_stale` from a ClickHouse SQL freshness query, against a real history store
(embedded chDB), through the store's read-only guard and caps (decision 0109): an output older
than `warnAfter` opens the alert, a newer row resolves it; a query the guard refuses, one the
caps stop, and one returning something that is not a time judge nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, S, details, kinds, request
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.clickhouse._limits import QueryLimits
from tickwheel.core.watchdog import Observed, Transition, WatchdogState, evaluate
from tickwheel.core.watchdog.freshness import failed_queries, queries, stale_outputs
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.history.rows import Source, requested_event_row
from tickwheel.services.watchdog.sql_freshness import SqlFreshnessProbe

pytestmark = pytest.mark.integration

NOW = 1_800_000_000_000
WRITER = "nightly-export"
NEWEST = f"SELECT max(event_time) FROM execution_events WHERE job_id = '{WRITER}'"


def output_row(store: ChdbHistoryStore, at: int) -> None:
    """The history of the job whose output is judged: one row, at `at`."""
    fired = request(WRITER, at, at)
    assert fired.record is not None
    source = Source("t", 0, at, at)
    store.insert("execution_events", [requested_event_row({**fired.record, "late": False}, source)])


def judged(job_id: str, sql: str) -> Observed:
    record = validate_job({"jobId": job_id, "type": "noop", "cron": "0 3 * * *",
                           "expectedMaxInterval": "26h",
                           "freshness": {"sql": sql, "warnAfter": "10s", "errorAfter": "30s"}},
                          NOW - 60 * S)  # fmt: skip
    return Observed("definition", job_id, record)


def ticker(state: WatchdogState, probe: SqlFreshnessProbe) -> Callable[[int], list[Transition]]:
    """One service tick at `now`: the probe's round, then an evaluation with what it found
    (stale outputs, and the queries that failed, decision 0135)."""

    def tick(now: int) -> list[Transition]:
        probe.refresh(queries(state.facts), now)
        extra = [*failed_queries(state.facts, probe.failing),
                 *stale_outputs(state.facts, probe.newest, now)]  # fmt: skip
        return evaluate(state, now, QUICK, extra)[0]

    return tick


def test_a_stale_sql_output_opens_and_a_newer_row_resolves(tmp_path: Path) -> None:
    store = ChdbHistoryStore(tmp_path / "history", limits=QueryLimits(timeout_s=2))
    try:
        store.migrate()
        output_row(store, NOW - 20 * S)
        state = WatchdogState()
        state.apply(judged("report", NEWEST))
        tick = ticker(state, SqlFreshnessProbe(every_ms=1, open_reader=lambda: store))
        got = tick(NOW)
        assert kinds(got) == [("output_stale", "report", "opened")]
        opened = details(got[0])
        assert opened["newest_at"] == NOW - 20 * S and opened["sql"] == NEWEST
        assert got[0].record()["severity"] == "warning"
        assert tick(NOW + S) == []  # still stale: the open incident, no second one
        output_row(store, NOW + 4 * S)
        got = tick(NOW + 5 * S)
        assert kinds(got) == [("output_stale", "report", "resolved")]
        assert details(got[0])["reason"] == "fresh_output"
    finally:
        store.close()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT max(ts) FROM file('/etc/passwd', 'CSV', 'ts DateTime')",  # the guard refuses
        "SELECT count() FROM numbers(1000000000000)",  # stopped by the 2 s cap
        "SELECT 'yesterday'",  # not a time
        "SELECT max(nope) FROM execution_events",  # does not run at all
    ],
)
def test_a_query_that_does_not_answer_with_a_time_judges_nothing(tmp_path: Path, sql: str) -> None:
    store = ChdbHistoryStore(tmp_path / "history", limits=QueryLimits(timeout_s=2))
    try:
        store.migrate()
        state = WatchdogState()
        state.apply(judged("report", sql))
        probe = SqlFreshnessProbe(every_ms=1, open_reader=lambda: store)
        probe.refresh(queries(state.facts), NOW + 3600 * S)
        assert probe.newest == {}
        assert list(stale_outputs(state.facts, probe.newest, NOW + 3600 * S)) == []
        # ...while a query that answers on the same store does judge (the store works).
        state.apply(judged("other", NEWEST))
        later = NOW + 3601 * S
        probe.refresh(queries(state.facts), later)
        # No row of the writer in this store: no output yet, counted from the job's creation.
        found = list(stale_outputs(state.facts, probe.newest, later))
        assert [(c.kind, c.subject, c.severity) for c in found] == [
            ("output_stale", "other", "critical")
        ]
    finally:
        store.close()


def test_a_query_that_fails_is_an_alert_of_its_own_until_it_answers(tmp_path: Path) -> None:
    """Decision 0135: the failure is visible — one `freshness_query_failed` incident with the
    store's error as evidence, however many rounds it keeps failing — and it resolves once the
    same query answers (here: it throws while the writer has no row, answers once it has)."""
    from tickwheel.core.watchdog.freshness import FAILED_KIND

    sql = (f"SELECT max(event_time) FROM execution_events WHERE job_id = '{WRITER}' "
           "HAVING throwIf(count() = 0, 'no output row yet') = 0")  # fmt: skip
    store = ChdbHistoryStore(tmp_path / "history", limits=QueryLimits(timeout_s=2))
    try:
        store.migrate()
        state = WatchdogState()
        state.apply(judged("report", sql))
        tick = ticker(state, SqlFreshnessProbe(every_ms=1, open_reader=lambda: store))
        got = tick(NOW)
        assert kinds(got) == [(FAILED_KIND, got[0].incident.subject, "opened")]
        evidence = details(got[0])
        assert "no output row yet" in evidence["error"] and evidence["jobs"] == ["report"]
        assert all(t.incident.kind != FAILED_KIND for t in tick(NOW + S) + tick(NOW + 2 * S))
        output_row(store, NOW + 2 * S)
        got = tick(NOW + 3 * S)
        assert [(t.incident.kind, t.transition) for t in got] == [(FAILED_KIND, "resolved")]
        assert details(got[0])["reason"] == "query_answered"
    finally:
        store.close()
