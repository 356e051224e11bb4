"""The history sink against the real broker and real chDB: it records every event of a known
history once, and the documented queries, the timeline and the audit answer right.

One sink (in a thread of this process, owning a fresh chDB directory) consumes the scenario
of `history_sink_fixtures` once for the module; each test then checks one promise through the
owner's endpoint, as the CLI reads it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tickwheel.adapters.clickhouse import HistorySettings
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.history import (
    ExecutionNotFound,
    OwnerClient,
    execution_timeline,
    open_history_reader,
    read_owner,
    run_query,
    schedule_audit,
)
from tickwheel.ports.history import HistoryQueryRejected, QueryResult
from tickwheel.services.history.settings import HistorySinkSettings
from tickwheel.topology import topic_name

from .history_reference import (
    reference_failure_rates,
    reference_fire_lateness,
    reference_open_executions,
    reference_tenant_daily,
)
from .history_sink_fixtures import (
    AS_OF,
    EPOCH,
    GARBAGE,
    UNSTORABLE_ID,
    WINDOW,
    Scenario,
    build_scenario,
    ms,
    run_cli,
    sink_in_thread,
    wait_caught_up,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

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


# -- every event recorded once ---------------------------------------------------------------
def test_every_event_request_and_definition_is_recorded_once(recorded: Any) -> None:
    scenario, reader, _ = recorded
    events = rows(reader, "SELECT event_id FROM execution_events FINAL ORDER BY event_id")
    assert [r[0] for r in events] == sorted({e["event_id"] for e in scenario.events})
    requests = rows(reader, "SELECT event_id FROM execution_requests FINAL ORDER BY event_id")
    expected = sorted(f"request:{r['execution_id']}:{r['attempt']}" for r in scenario.requests)
    assert [r[0] for r in requests] == expected
    definitions = rows(
        reader,
        "SELECT job_id, version, deleted, enabled FROM job_definitions FINAL "
        "ORDER BY job_id, event_time, version",
    )
    by_job: dict[str, list[tuple[int, bool, bool]]] = {}
    for job_id, version, deleted, enabled in definitions:
        by_job.setdefault(job_id, []).append((version, deleted, enabled))
    assert by_job["audit-job"] == [(1, False, True), (2, False, False)]
    # The tombstone is dated by its Kafka timestamp (when it was published), not the scenario.
    assert sorted(by_job["fail-perm"]) == [(0, True, False), (1, False, True)], (
        "tombstone → deleted"
    )
    assert rows(reader, "SELECT workflow_id, step_id, tenant_id FROM workflow_events FINAL "
                "ORDER BY event_id") == [("wf-1", None, "acme"), ("wf-1", "extract", "acme")]  # fmt: skip
    assert rows(reader, "SELECT alert_type, job_id FROM alerts FINAL") == [
        ("job_absent", "audit-job")
    ]


def test_undecodable_and_unstorable_records_are_dead_lettered_and_the_sink_goes_on(
    recorded: Any,
) -> None:
    scenario, reader, _ = recorded
    events_topic = topic_name("executions.events")
    garbage = next(r for r in read_to_end(events_topic) if r.value == GARBAGE)
    letters = dict(
        rows(
            reader,
            "SELECT event_id, reason FROM dead_letters FINAL "
            "WHERE startsWith(reason, 'undecodable') AND job_id = 'audit-job'",
        )
    )
    assert f"undecodable:{events_topic}/{garbage.partition}/{garbage.offset}" in letters
    assert f"undecodable:{events_topic}/{garbage.partition}/{garbage.offset + 1}" in letters
    assert any("unstorable" in reason and "event_time" in reason for reason in letters.values())
    # The bad record's own place has columns of its own; source_* is where the sink read
    # the dead letter.
    origin = rows(
        reader,
        "SELECT record_topic, record_partition, record_offset, source_topic FROM dead_letters "
        "FINAL WHERE event_id = {id:String}",
        id=f"undecodable:{events_topic}/{garbage.partition}/{garbage.offset}",
    )
    assert set(origin) == {
        (events_topic, garbage.partition, garbage.offset, topic_name("executions.dlq"))
    }
    assert not rows(
        reader, "SELECT 1 FROM execution_events WHERE event_id = {id:String}", id=UNSTORABLE_ID
    )
    # The audited job's later events, on the same partition, were all recorded after them.
    later = rows(
        reader,
        "SELECT count() FROM execution_events FINAL WHERE source_topic = {t:String} "
        "AND source_partition = {p:Int32} AND source_offset > {o:Int64} AND job_id = 'audit-job'",
        t=events_topic,
        p=garbage.partition,
        o=garbage.offset + 1,
    )[0][0]
    after_garbage = scenario.records[scenario.records.index(("executions.events", "audit-job",
                                                              GARBAGE)) + 2:]  # fmt: skip
    published = [r for r in after_garbage if r[:2] == ("executions.events", "audit-job")]
    assert published and later == len(published)


# -- the documented analyst queries ------------------------------------------------------------
def window() -> dict[str, str]:
    return {"since": WINDOW[0], "until": WINDOW[1]}


def window_ms() -> tuple[int, int]:
    return ms(dt.datetime.fromisoformat(WINDOW[0])), ms(dt.datetime.fromisoformat(WINDOW[1]))


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


# -- partitions and retention, from ClickHouse's own system tables ------------------------------
def test_history_is_partitioned_by_day_with_the_configured_ttl(recorded: Any) -> None:
    scenario, reader, _ = recorded
    days = sorted({
        (EPOCH + dt.timedelta(milliseconds=e["event_time"])).strftime("%Y%m%d")
        for e in scenario.events
    })  # fmt: skip
    parts = rows(
        reader,
        "SELECT partition, max(delete_ttl_info_max) FROM system.parts "
        "WHERE database = currentDatabase() AND table = 'execution_events' AND active "
        "GROUP BY partition ORDER BY partition",
    )
    assert [p[0] for p in parts] == days
    newest = dict(
        rows(
            reader,
            "SELECT toString(toYYYYMMDD(event_time)), toDateTime(max(event_time)) "
            "FROM execution_events GROUP BY 1",
        )
    )
    for partition, ttl in parts:
        assert ttl == newest[partition] + dt.timedelta(days=RETENTION_DAYS)
    engines = dict(
        rows(
            reader, "SELECT name, engine_full FROM system.tables WHERE database = currentDatabase()"
        )
    )
    assert f"toIntervalDay({RETENTION_DAYS})" in engines["execution_events"]
    assert "PARTITION BY toYYYYMMDD(event_time)" in engines["execution_requests"]


# -- reading through the owner ------------------------------------------------------------------
@EMBEDDED_ONLY
def test_cli_reads_through_the_owner_and_refuses_writes(
    recorded: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reader, settings = recorded
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    directory = ["--history-dir", str(settings.history.history_dir)]
    code, out, _ = run_cli(
        ["history", "query", "tenant_daily", "--json", "--param", f"since={WINDOW[0]}",
         "--param", f"until={WINDOW[1]}", *directory]
    )  # fmt: skip
    assert code == 0
    direct = run_query(reader, "tenant_daily", window()).rows
    assert [tuple(r.values()) for r in json.loads(out)] == [
        (day.isoformat(), *rest) for day, *rest in direct
    ]
    code, out, err = run_cli(["history", "sql", "DROP TABLE execution_events", *directory])
    assert (code, out) == (2, "") and "read-only" in err
    code, out, _ = run_cli(
        [
            "history",
            "audit",
            "audit-job",
            "--from",
            WINDOW[0],
            "--to",
            WINDOW[1],
            "--json",
            *directory,
        ]
    )
    assert code == 0 and json.loads(out)["missing"] == 1


@EMBEDDED_ONLY
def test_endpoint_is_loopback_only_token_guarded_and_read_only(recorded: Any) -> None:
    _, reader, settings = recorded
    info = read_owner(Path(settings.history.history_dir))
    assert info is not None and info.host == "127.0.0.1"
    assert (Path(settings.history.history_dir) / "owner.json").stat().st_mode & 0o077 == 0

    def post(sql: str, token: str) -> tuple[int, dict[str, Any]]:
        connection = http.client.HTTPConnection(info.host, info.port, timeout=10)
        body = json.dumps({"sql": sql, "params": {}})
        connection.request("POST", "/v1/query", body, {"X-Tickwheel-Token": token})
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    assert post("SELECT 1", "wrong")[0] == 401
    status, document = post("INSERT INTO alerts (event_id) VALUES ('x')", info.token)
    assert (status, document["error"]) == (400, "rejected")
    status, document = post("SELECT * FROM file('/etc/passwd')", info.token)
    assert (status, document["error"]) == (400, "rejected")
    with pytest.raises(HistoryQueryRejected):
        reader.query("ALTER TABLE alerts DELETE WHERE 1")
    assert post("SELECT count() AS n FROM alerts FINAL", info.token)[1]["rows"] == [[1]]
