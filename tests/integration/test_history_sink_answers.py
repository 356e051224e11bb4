"""The history the sink recorded answers right: the documented analyst queries, the schedule
audit and the execution timeline, against answers recomputed from the published events.

One sink consumes the scenario of `history_scenario.py` once for the module
(`history_sink_recorded.py`), against the real broker and real chDB; each test reads it through
the owner's endpoint, as the CLI does.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from tests.integration.history_reference import (
    reference_failure_rates,
    reference_fire_lateness,
    reference_open_executions,
    reference_tenant_daily,
)
from tests.integration.history_scenario import (
    AS_OF,
    ms,
)
from tests.integration.history_sink_recorded import (
    recorded,
    window,
    window_ms,
)
from tickwheel.history import (
    ExecutionNotFound,
    execution_timeline,
    run_query,
    schedule_audit,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
__all__ = ["recorded"]  # a fixture, imported for pytest to find


# -- the documented analyst queries ------------------------------------------------------------
def test_fire_lateness_percentiles_by_job_type_and_hour(recorded: Any) -> None:
    scenario, reader, _ = recorded
    result = run_query(reader, "fire_lateness", window())
    assert result.columns == (
        "job_type", "hour", "occurrences", "late", "p50_ms", "p99_ms", "max_ms",
    )  # fmt: skip
    assert result.rows == reference_fire_lateness(scenario, *window_ms())
    # The manual run is not an occurrence fired from the schedule.
    assert sum(r[2] for r in result.rows) == len(scenario.story) - 1


def test_failure_and_retry_rates_by_job_type(recorded: Any) -> None:
    scenario, reader, _ = recorded
    result = run_query(reader, "failure_rates", window()).as_dicts()
    reference = reference_failure_rates(scenario, *window_ms())
    assert [r["job_type"] for r in result] == sorted(reference)
    for row in result:
        want = reference[row["job_type"]]
        for key, value in want.items():
            if key.endswith("_rate"):
                assert row[key] == pytest.approx(value, abs=5e-5), (row["job_type"], key)
            else:
                assert row[key] == value, (row["job_type"], key)


def test_executions_and_dead_letters_per_tenant_per_day(recorded: Any) -> None:
    scenario, reader, _ = recorded
    result = run_query(reader, "tenant_daily", window())
    assert result.columns == ("day", "tenant_id", "executions", "succeeded", "dead_letters")
    assert result.rows == reference_tenant_daily(scenario, *window_ms())
    assert sum(r[4] for r in result.rows) == 2


def test_executions_still_without_a_terminal_outcome(recorded: Any) -> None:
    scenario, reader, _ = recorded
    result = run_query(reader, "open_executions", {"as_of": AS_OF}).as_dicts()
    as_of_ms = ms(dt.datetime.fromisoformat(AS_OF))
    assert [r["execution_id"] for r in result] == reference_open_executions(scenario, as_of_ms)
    by_id = {r["execution_id"]: r for r in result}
    running = by_id[scenario.story["open"]]
    assert (running["attempts"], running["last_event"]) == (1, "heartbeat")
    # Its only success came from a fenced attempt: not accepted, so still open.
    stale = by_id[scenario.story["fenced-open"]]
    assert (stale["attempts"], stale["last_event"]) == (2, "fenced")
    last = ms(stale["last_event_time"])
    assert stale["quiet_for_s"] == (as_of_ms - last) // 1000


def test_schedule_audit_finds_fired_skipped_missing_and_paused(recorded: Any) -> None:
    scenario, reader, _ = recorded
    audit = schedule_audit(reader, scenario.audit_job, *scenario.audit_window)
    statuses = [o["status"] for o in audit["occurrences"]]
    assert statuses == scenario.audit_statuses
    assert (audit["expected"], audit["fired"], audit["skipped"], audit["missing"]) == (10, 5, 4, 1)
    occurrences = audit["occurrences"]
    assert [o["skip_reason"] for o in occurrences[4:8]] == ["misfire_skip"] + [
        "misfire_skip:range"
    ] * 3
    late = occurrences[9]
    assert (late["trigger"], late["lateness_ms"], late["outcome"]) == (
        "catch_up",
        95_000,
        "succeeded",
    )
    events = {e["execution_id"]: e for e in scenario.events if e["event_type"] == "requested"}
    for occurrence in occurrences[:4]:
        request = events[occurrence["execution_id"]]
        assert occurrence["lateness_ms"] == request["event_time"] - request["fire_time"]
        assert occurrence["outcome"] == "succeeded"


# -- the execution timeline ----------------------------------------------------------------------
def test_timeline_shows_every_attempt_and_marks_the_fenced_outcome(recorded: Any) -> None:
    scenario, reader, _ = recorded
    timeline = execution_timeline(reader, scenario.story["fenced"])
    assert json.loads(json.dumps(timeline)) == timeline, "JSON-able as it is"
    assert (timeline["outcome"], timeline["status"], timeline["attempt_count"]) == (
        "succeeded", "succeeded", 2,
    )  # fmt: skip
    first, second = timeline["attempts"]
    assert (first["worker_id"], first["outcome"], first["accepted"]) == ("w-1", "succeeded", False)
    assert first["fenced"]["reason"] == "stale_attempt"
    assert (second["worker_id"], second["trigger"], second["accepted"]) == (
        "w-2",
        "lease_expired",
        True,
    )
    assert timeline["finished_at"] == second["outcome_at"]
    assert (timeline["job_version"], timeline["priority"]) == (1, "normal")


def test_timeline_of_retries_and_jitter(recorded: Any) -> None:
    scenario, reader, _ = recorded
    late = execution_timeline(reader, scenario.story["audit-9"])
    assert [a["outcome"] for a in late["attempts"]] == ["failed", "succeeded"]
    assert late["attempts"][0]["error"] == "boom"
    assert late["attempts"][0]["retry_scheduled"] is not None
    assert (late["attempts"][0]["trigger"], late["attempts"][0]["late"]) == ("catch_up", True)
    assert late["lateness_ms"] == 95_000
    jittered = execution_timeline(reader, scenario.story["audit-2"])
    assert jittered["jitter_ms"] == 3_000
    beats = execution_timeline(reader, scenario.story["succeeded"])["attempts"][0]
    assert len(beats["heartbeats"]) == 2 and len(beats["lease_deadlines"]) == 3
    exhausted = execution_timeline(reader, scenario.story["exhausted"])
    assert (exhausted["outcome"], exhausted["attempt_count"]) == ("dead_lettered", 3)
    assert exhausted["dead_letter"]["reason"] == "max_attempts_exhausted"


def test_every_timeline_outcome_matches_its_story(recorded: Any) -> None:
    scenario, reader, _ = recorded
    for execution, outcome in scenario.outcome.items():
        timeline = execution_timeline(reader, execution)
        assert timeline["outcome"] == outcome, execution
        times = [e["event_time"] for e in timeline["events"]]
        assert times == sorted(times)
    with pytest.raises(ExecutionNotFound):
        execution_timeline(reader, "no-such-execution")
