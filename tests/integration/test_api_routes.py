"""The API's read routes beyond jobs, over the real broker and real chDB: alerts, dead
letters, occurrences, and the SSE timeline — each the tenant's own and no other's."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.api_clients import Connect, connect, jobs, key, problem
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.services.api.models import SEED_CRON
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
__all__ = ["connect", "jobs"]  # fixtures, imported for pytest to find


def publish(bootstrap: str, topic: str, record_name: str, key_: str, value: dict[str, Any]) -> None:
    producer = EventProducer(bootstrap)
    producer.send(topic_name(topic), key_, encode(record_name, value))
    producer.flush()


def alert(incident: str, tenant: str, transition: str = "opened") -> dict[str, Any]:
    details = {"incident_id": incident, "fingerprint": f"job_absent:{incident}",
               "transition": transition, "subject": incident, "opened_at": 1000,
               "resolved_at": 2000 if transition == "resolved" else None, "evidence": {}}  # fmt: skip
    return {"alert_id": f"{incident}:{1 if transition == 'opened' else 2}", "event_time": 1000,
            "kind": "job_absent", "severity": "critical", "job_id": incident,
            "tenant_id": tenant, "message": f"{incident} is absent",
            "details": json.dumps(details)}  # fmt: skip


def test_alerts_are_the_tenants_own(connect: Connect, kafka_bootstrap: str) -> None:
    publish(kafka_bootstrap, "alerts", "Alert", "a", alert("acme-late", "acme"))
    publish(kafka_bootstrap, "alerts", "Alert", "b", alert("globex-late", "globex"))
    publish(kafka_bootstrap, "alerts", "Alert", "c", alert("acme-late", "acme", "resolved"))
    acme = connect(key(kafka_bootstrap, "acme", "read"))
    listed = acme.get("/v1/alerts").json()["items"]
    assert [(i["incident_id"], i["state"]) for i in listed] == [("acme-late", "resolved")]
    assert acme.get("/v1/alerts?state=open").json()["items"] == []
    assert acme.get("/v1/alerts/acme-late:1").json()["incident_id"] == "acme-late"
    problem(acme.get("/v1/alerts/globex-late"), 404, "not-found")


def letter(letter_id: str, job_id: str | None, event_time: int) -> dict[str, Any]:
    return {"dead_letter_id": letter_id, "event_time": event_time, "reason": "permanent_error",
            "source_topic": "executions.events", "source_partition": 0, "source_offset": 1,
            "execution_id": None, "job_id": job_id, "attempt": 1, "error": "boom",
            "payload": None, "raw_value": b"\x00raw" if job_id is None else None}  # fmt: skip


def test_dead_letters_are_the_tenants_and_page_by_cursor(
    connect: Connect, kafka_bootstrap: str
) -> None:
    acme = connect(key(kafka_bootstrap, "acme", "write"))
    assert acme.post("/v1/jobs", json={**SEED_CRON, "jobId": "dl-job"}).status_code == 201
    for n in range(3):
        publish(
            kafka_bootstrap,
            "executions.dlq",
            "DeadLetter",
            "dl-job",
            letter(f"dl-{n}", "dl-job", n),
        )
    publish(kafka_bootstrap, "executions.dlq", "DeadLetter", "x", letter("orphan", None, 9))
    first = acme.get("/v1/dead-letters?limit=2")
    assert [d["dead_letter_id"] for d in first.json()["items"]] == ["dl-0", "dl-1"]
    assert 'rel="next"' in first.headers["link"]
    rest = acme.get(f"/v1/dead-letters?limit=2&cursor={first.json()['nextCursor']}").json()
    assert [d["dead_letter_id"] for d in rest["items"]] == ["dl-2"] and rest["nextCursor"] is None
    assert acme.get("/v1/dead-letters/dl-1").json()["error"] == "boom"
    problem(acme.get("/v1/dead-letters/orphan"), 404, "not-found")
    globex = connect(key(kafka_bootstrap, "globex", "read"))
    assert globex.get("/v1/dead-letters").json()["items"] == []
    problem(globex.get("/v1/dead-letters/dl-0"), 404, "not-found")
    # A letter of no live job is the operators' (the tenant `default`).
    operators = connect(key(kafka_bootstrap, "default", "admin"))
    orphan = operators.get("/v1/dead-letters/orphan").json()
    assert orphan["raw_value_base64"] == "AHJhdw=="


@pytest.fixture
def history(tmp_path: Path) -> Iterator[Any]:
    from tickwheel.adapters.clickhouse import HistorySettings, open_history_store

    store = open_history_store(HistorySettings(history_dir=tmp_path / "history"))
    store.migrate()

    class Unclosed:
        def query(self, sql: str, params: Any = None) -> Any:
            return store.query(sql, params)

        def close(self) -> None:
            pass

    Unclosed.store = store  # type: ignore[attr-defined]
    yield Unclosed
    store.close()


def event(execution: str, event_type: str, minute: int, tenant: str) -> dict[str, Any]:
    slot = dt.datetime(2026, 11, 30, 2, tzinfo=dt.UTC)
    return {"event_id": f"{execution}:{event_type}", "event_time": slot + dt.timedelta(minutes=minute),
            "event_type": event_type, "job_id": f"job-{execution}", "job_type": "noop",
            "tenant_id": tenant, "execution_id": execution, "attempt": 1,
            "scheduled_time": slot, "fire_time": slot, "worker_id": "w1", "error": None,
            "source_topic": "executions.events", "source_partition": 0,
            "source_offset": minute}  # fmt: skip


def sse(text: str) -> list[tuple[str, Any]]:
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_the_timeline_stream_ends_when_done_or_at_its_timeout_and_is_the_tenants(
    connect: Connect, kafka_bootstrap: str, history: Any
) -> None:
    history.store.insert("execution_events", [
        event("done", "requested", 0, "acme"), event("done", "leased", 1, "acme"),
        event("done", "succeeded", 2, "acme"),
        event("running", "requested", 0, "acme"), event("running", "leased", 1, "acme"),
    ])  # fmt: skip
    acme = connect(key(kafka_bootstrap, "acme", "read"), history=history)
    done = acme.get("/v1/executions/done/events")
    assert done.status_code == 200 and done.headers["content-type"].startswith("text/event-stream")
    events = sse(done.text)
    assert [name for name, _ in events] == ["timeline", "end"]
    assert events[0][1]["status"] == "succeeded" and events[1][1] == {"reason": "finished"}
    running = sse(acme.get("/runs/running/events?timeout=1&interval=0.5").text)
    assert [name for name, _ in running] == ["timeline", "end"]
    assert running[0][1]["status"] == "running" and running[1][1] == {"reason": "timeout"}
    problem(acme.get("/v1/executions/nope/events"), 404, "not-found")
    globex = connect(key(kafka_bootstrap, "globex", "read"), history=history)
    problem(globex.get("/v1/executions/done/events"), 404, "not-found")
    problem(globex.get("/v1/executions/done"), 404, "not-found")


def test_occurrences_list_the_future_slots_and_refuse_another_tenant(
    connect: Connect, kafka_bootstrap: str, history: Any
) -> None:
    acme = connect(key(kafka_bootstrap, "acme", "write"), history=history)
    created = acme.post("/v1/jobs", json={**SEED_CRON, "jobId": "occ", "timezone": "UTC"})
    assert created.status_code == 201
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    window = {"from": (today - dt.timedelta(days=2)).isoformat(),
              "to": (today + dt.timedelta(days=4)).isoformat()}  # fmt: skip
    body = acme.get("/v1/jobs/occ/occurrences", params=window).json()
    # The history has recorded no definition of the job yet: the past is not guessed at.
    assert body["history"] == "none-yet"
    future = [o["scheduledTime"] for o in body["items"] if o["status"] == "scheduled"]
    expected = [(today + dt.timedelta(days=d, hours=2)) for d in range(4)]
    now = dt.datetime.now(dt.UTC)
    assert future == [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in expected if t > now]
    bad = acme.get("/v1/jobs/occ/occurrences", params={"from": "yesterday", "to": window["to"]})
    assert problem(bad, 422, "validation-error")["errors"][0]["parameter"] == "from"
    globex = connect(key(kafka_bootstrap, "globex", "read"), history=history)
    problem(globex.get("/v1/jobs/occ/occurrences", params=window), 404, "not-found")


def test_history_sql_is_for_operators_admin_keys_through_the_read_only_guard(
    connect: Connect, kafka_bootstrap: str, history: Any
) -> None:
    history.store.insert("execution_events", [event("q", "requested", 0, "acme")])
    operators = connect(key(kafka_bootstrap, "default", "admin"), history=history)
    answer = operators.post("/v1/history/sql", json={
        "sql": "SELECT execution_id, tenant_id FROM execution_events WHERE execution_id = {e:String}",
        "params": {"e": "q"}})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["columns"] == ["execution_id", "tenant_id"]
    assert answer.json()["rows"] == [["q", "acme"]]
    refused = operators.post("/v1/history/sql", json={"sql": "DROP TABLE execution_events"})
    assert problem(refused, 422, "query-refused")["errors"][0]["pointer"] == "/sql"
    tenant_admin = connect(key(kafka_bootstrap, "acme", "admin"), history=history)
    problem(tenant_admin.post("/v1/history/sql", json={"sql": "SELECT 1"}), 403, "forbidden")
    writer = connect(key(kafka_bootstrap, "default", "write"), history=history)
    problem(writer.post("/v1/history/sql", json={"sql": "SELECT 1"}), 403, "forbidden")


def test_an_open_incident_is_acknowledged_through_the_watchdogs_commands(
    connect: Connect, kafka_bootstrap: str
) -> None:
    from tickwheel.adapters.avro import decode
    from tickwheel.adapters.kafka.reader import read_to_end

    publish(kafka_bootstrap, "alerts", "Alert", "a", alert("acme-open", "acme"))
    publish(kafka_bootstrap, "alerts", "Alert", "b", alert("acme-done", "acme"))
    publish(kafka_bootstrap, "alerts", "Alert", "c", alert("acme-done", "acme", "resolved"))
    token = key(kafka_bootstrap, "acme", "write")
    acme = connect(token)
    sent = acme.post("/v1/alerts/acme-open:1/ack", json={"note": "on it"})
    assert sent.status_code == 202, sent.text
    assert sent.json()["incidentId"] == "acme-open"
    commands = [decode(r.value, "Alert")[1]
                for r in read_to_end(topic_name("watchdog.commands"), None, kafka_bootstrap)]  # fmt: skip
    assert [(c["kind"], c["message"]) for c in commands] == [("acknowledge", "on it")]
    assert json.loads(commands[0]["details"]) == {
        "incident_id": "acme-open", "by": f"api-key {token.split('_')[1]}"}  # fmt: skip
    problem(acme.post("/v1/alerts/acme-done/ack", json={"note": "x"}), 409, "incident-resolved")
    globex = connect(key(kafka_bootstrap, "globex", "write"))
    problem(globex.post("/v1/alerts/acme-open/ack", json={"note": "x"}), 404, "not-found")
    reader = connect(key(kafka_bootstrap, "acme", "read"))
    problem(reader.post("/v1/alerts/acme-open/ack", json={"note": "x"}), 403, "forbidden")
