"""The history sink against the real broker and real chDB: it records every event of a known
history once, dead-letters what no table can take and goes on, partitions by day with the
configured TTL, and its owner serves the history read-only (the CLI through it, the endpoint
on loopback behind a token).

One sink consumes the scenario of `history_scenario.py` once for the module
(`history_sink_recorded.py`); each test then checks one promise through the owner's endpoint,
as the CLI reads it. The documented answers are `test_history_sink_answers.py`.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_cli import run_cli
from tests.integration.history_scenario import (
    EPOCH,
    GARBAGE,
    UNSTORABLE_ID,
    WINDOW,
)
from tests.integration.history_sink_recorded import (
    EMBEDDED_ONLY,
    RETENTION_DAYS,
    recorded,
    rows,
    window,
)
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.history import (
    read_owner,
    run_query,
)
from tickwheel.ports.history import HistoryQueryRejected
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
__all__ = ["recorded"]  # a fixture, imported for pytest to find


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
