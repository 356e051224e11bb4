"""`output_stale`: judged from the output topic's newest record time the probe read, with
`warnAfter`/`errorAfter`; a topic not read yet judges nothing; an empty one counts from the
job's creation. And `freshness` as the definition check takes it."""

from __future__ import annotations

import json

import pytest

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, T0, S, definition
from tests.unit.core.watchdog.test_watchdog_rules import bounded
from tickwheel.core.definition import validate_definition
from tickwheel.core.watchdog import Observed, WatchdogState, evaluate
from tickwheel.core.watchdog.freshness import queries, stale_outputs, topics
from tickwheel.errors import InvalidInput

CHECK = json.dumps({"topic": "orders.out", "warnAfter": "10s", "errorAfter": "30s"})


def judge(state: WatchdogState, newest: dict[str, int | None], now: int) -> list[str]:
    got = evaluate(state, now, QUICK, list(stale_outputs(state.facts, newest, now)))[0]
    return [
        f"{t.transition}:{t.incident.severity}" for t in got if t.incident.kind == "output_stale"
    ]


def test_stale_output_warns_then_errors_and_a_new_record_resolves() -> None:
    state = WatchdogState()
    state.apply(bounded("j", freshness=CHECK, expectedMaxInterval="1h"))
    assert topics(state.facts) == {"orders.out"}
    assert judge(state, {}, T0 + 60 * S) == []  # not read yet: nothing judged
    assert judge(state, {"orders.out": T0 + 55 * S}, T0 + 61 * S) == []
    assert judge(state, {"orders.out": T0 + 55 * S}, T0 + 66 * S) == ["opened:warning"]
    assert judge(state, {"orders.out": T0 + 55 * S}, T0 + 86 * S) == ["updated:critical"]
    assert judge(state, {"orders.out": T0 + 90 * S}, T0 + 91 * S) == ["resolved:critical"]


def test_an_empty_output_topic_counts_from_the_job_s_creation() -> None:
    state = WatchdogState()
    state.apply(bounded("j", freshness=CHECK, expectedMaxInterval="1h"))
    [condition] = stale_outputs(state.facts, {"orders.out": None}, T0 + 12 * S)
    assert condition.evidence["newest_at"] is None and condition.evidence["age_ms"] == 12 * S


def test_paused_or_unchecked_jobs_are_not_judged() -> None:
    state = WatchdogState()
    state.apply(definition("plain", emi="1h"))
    state.apply(bounded("paused", enabled=False, freshness=CHECK))
    assert topics(state.facts) == set()
    assert list(stale_outputs(state.facts, {"orders.out": None}, T0 + 3600 * S)) == []


def test_the_definition_check_takes_an_object_or_its_text_and_refuses_the_rest() -> None:
    base = {"jobId": "j", "type": "noop", "payload": {}, "cron": "0 2 * * *"}
    stored = validate_definition({**base, "freshness": json.loads(CHECK)}, T0)["freshness"]
    assert json.loads(stored) == json.loads(CHECK)
    assert validate_definition({**base, "freshness": stored}, T0)["freshness"] == stored
    for bad, field in (({"topic": "x"}, "freshness.warnAfter"),
                       ({"topic": "a b", "warnAfter": "1h"}, "freshness.topic"),
                       ({"topic": "x", "warnAfter": "2h", "errorAfter": "1h"},
                        "freshness.errorAfter"),
                       ({"topic": "x", "warnAfter": "1h", "sql": "SELECT 1"}, "freshness"),
                       ({"warnAfter": "1h"}, "freshness"),
                       ({"sql": "DROP TABLE alerts", "warnAfter": "1h"}, "freshness.sql"),
                       ({"sql": "SELECT " + "1" * 2_000, "warnAfter": "1h"}, "freshness.sql"),
                       ({"sql": 7, "warnAfter": "1h"}, "freshness.sql"),
                       ("{not json", "freshness")):  # fmt: skip
        with pytest.raises(InvalidInput) as caught:
            validate_definition({**base, "freshness": bad}, T0)
        assert caught.value.field == field


def test_a_sql_check_is_keyed_by_its_query_and_judged_like_a_topic() -> None:
    sql = "SELECT max(event_time) FROM execution_events WHERE job_id = 'export'"
    base = {"jobId": "q", "type": "noop", "payload": {}, "cron": "0 2 * * *"}
    record = validate_definition({**base, "freshness": {"sql": sql, "warnAfter": "10s"}}, T0)
    state = WatchdogState()
    state.apply(Observed("definition", "q", record))
    assert queries(state.facts) == {sql} and topics(state.facts) == set()
    assert list(stale_outputs(state.facts, {}, T0 + 3600 * S)) == []  # not read: not judged
    [condition] = stale_outputs(state.facts, {f"sql:{sql}": T0 + 5 * S}, T0 + 20 * S)
    assert condition.kind == "output_stale" and condition.evidence["sql"] == sql
    assert condition.evidence["age_ms"] == 15 * S and condition.severity == "warning"
    assert "freshness query" in condition.message


# -- a freshness query that does not answer is an alert of its own (decision 0135) -----------
def test_a_failing_freshness_query_opens_once_with_its_error_and_resolves_when_it_answers() -> None:
    from tickwheel.core.watchdog.freshness import FAILED_KIND, failed_queries, query_subject

    sql = "SELECT max(ts) FROM orders_out"
    check = json.dumps({"sql": sql, "warnAfter": "10s"})
    state = WatchdogState()
    for job_id in ("a", "b"):
        state.apply(bounded(job_id, freshness=check, expectedMaxInterval="1h"))
    failing = {sql: ("Unknown table orders_out", T0 + 10 * S)}

    def tick(now: int, failing: dict[str, tuple[str, int]]) -> list[tuple[str, str]]:
        extra = list(failed_queries(state.facts, failing))
        got = evaluate(state, now, QUICK, extra)[0]
        return [(t.incident.kind, t.transition) for t in got if t.incident.kind == FAILED_KIND]

    got = evaluate(state, T0 + 11 * S, QUICK, list(failed_queries(state.facts, failing)))[0]
    [opened] = [t for t in got if t.incident.kind == FAILED_KIND]
    assert opened.transition == "opened" and opened.incident.subject == query_subject(sql)
    evidence = json.loads(opened.record()["details"])["evidence"]
    assert evidence["error"] == "Unknown table orders_out" and evidence["sql"] == sql
    assert evidence["jobs"] == ["a", "b"] and evidence["failing_since"] == T0 + 10 * S
    assert tick(T0 + 12 * S, failing) == []  # still failing: the same incident, no second one
    assert tick(T0 + 13 * S, {}) == [(FAILED_KIND, "resolved")]  # it answers again


def test_a_query_no_enabled_job_declares_raises_nothing() -> None:
    from tickwheel.core.watchdog.freshness import failed_queries

    state = WatchdogState()
    state.apply(bounded("off", enabled=False, expectedMaxInterval="1h",
                        freshness=json.dumps({"sql": "SELECT 1", "warnAfter": "10s"})))  # fmt: skip
    assert list(failed_queries(state.facts, {"SELECT 1": ("boom", T0)})) == []
