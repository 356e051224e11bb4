"""`POST /runs/{id}/retry` (seed 003) over the real broker and real chDB: a dead-lettered run
is retried through its dead letter (a trigger on `timers.commands`, the letter recorded as
retried, decision 0102); what is not retryable, already retried, unknown or another tenant's
is refused and sends nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.api_clients import Connect, connect, jobs, key, problem
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.core.identity import execution_id
from tickwheel.core.timer.execution_records import execution_dead_letter
from tickwheel.sdk.dead_letters import read_resolutions
from tickwheel.services.api.models import SEED_CRON
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
__all__ = ["connect", "jobs"]  # fixtures, imported for pytest to find
JOB = "retry-job"


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


def events(execution: str, tenant: str, *types: str) -> list[dict[str, Any]]:
    """The history's rows of one execution of JOB, one event a minute, in the order given."""
    slot = dt.datetime(2026, 11, 30, 2, tzinfo=dt.UTC)
    return [{"event_id": f"{execution}:{kind}", "event_time": slot + dt.timedelta(minutes=n),
             "event_type": kind, "job_id": JOB, "job_type": "reconcile_daily",
             "tenant_id": tenant, "execution_id": execution, "attempt": 1,
             "scheduled_time": slot, "fire_time": slot, "worker_id": "w1",
             "error": "upstream refused" if kind in ("failed", "dead_lettered") else None,
             "source_topic": "executions.events", "source_partition": 0, "source_offset": n}
            for n, kind in enumerate(types)]  # fmt: skip


def triggers(bootstrap: str) -> list[dict[str, Any]]:
    out = []
    for record in read_to_end(topic_name("timers.commands"), None, bootstrap):
        assert record.value is not None
        out.append(decode(record.value, "TimerCommand")[1])
    return [c for c in out if c["kind"] == "trigger"]


@pytest.mark.parametrize(("resource", "other"), [("runs", "executions"), ("executions", "runs")])
def test_a_dead_lettered_run_is_retried_once_through_its_letter_and_refusals_send_nothing(
    connect: Connect, kafka_bootstrap: str, history: Any, resource: str, other: str
) -> None:
    """Seed 003's `/runs/{id}/retry` and seed 000's `/executions/{id}/retry` are one
    operation: a retry through either is refused through the other afterwards."""
    acme = connect(key(kafka_bootstrap, "acme", "write"), history=history)
    created = acme.post("/v1/jobs", json={**SEED_CRON, "jobId": JOB})
    assert created.status_code == 201, created.text
    version = created.json()["version"]
    dead, running, done = (execution_id(JOB, version, slot) for slot in (1_000, 2_000, 3_000))
    history.store.insert("execution_events", [
        *events(dead, "acme", "requested", "leased", "failed", "dead_lettered"),
        *events(running, "acme", "requested", "leased"),
        *events(done, "acme", "requested", "leased", "succeeded"),
    ])  # fmt: skip
    request = {"execution_id": dead, "job_id": JOB, "priority": "normal", "payload": "{}"}
    letter = execution_dead_letter(request, 1, "max_attempts_exhausted", "upstream refused", 9)
    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("executions.dlq"), JOB, encode("DeadLetter", letter))
    producer.flush()

    retry = acme.post(f"/v1/{resource}/{dead}/retry", json={"note": "upstream fixed"},
                      headers={"Idempotency-Key": "retry-1"})  # fmt: skip
    assert retry.status_code == 202, retry.text
    body = retry.json()
    [command] = triggers(kafka_bootstrap)
    assert (command["job_id"], command["command_id"]) == (JOB, body["commandId"])
    assert body["executionId"] == execution_id(JOB, version, command["requested_at"])
    assert body["executionId"] != dead
    assert (body["runId"], body["via"], body["deadLetterId"]) == (dead, "dead-letter",
                                                                  letter["dead_letter_id"])  # fmt: skip
    resolution = read_resolutions(kafka_bootstrap)[letter["dead_letter_id"]]
    assert (resolution["action"], resolution["retry_execution_id"]) == ("retried",
                                                                        body["executionId"])  # fmt: skip
    assert resolution["note"] == "upstream fixed" and resolution["tenant_id"] == "acme"

    # The same key replays the original answer; a new request for the same run is refused.
    replay = acme.post(f"/v1/{resource}/{dead}/retry", json={"note": "upstream fixed"},
                       headers={"Idempotency-Key": "retry-1"})  # fmt: skip
    assert (replay.status_code, replay.json()) == (202, body)
    again = problem(acme.post(f"/{other}/{dead}/retry"), 409, "dead-letter-resolved")
    assert again["resolution"]["retry_execution_id"] == body["executionId"]
    assert (
        problem(acme.post(f"/{resource}/{running}/retry"), 409, "run-not-finished")["runStatus"]
        == "running"
    )
    assert (
        "succeeded"
        in problem(acme.post(f"/v1/{resource}/{done}/retry"), 409, "run-succeeded")["detail"]
    )
    problem(acme.post(f"/v1/{resource}/no-such-run/retry"), 404, "not-found")
    globex = connect(key(kafka_bootstrap, "globex", "write"), history=history)
    problem(globex.post(f"/v1/{resource}/{dead}/retry"), 404, "not-found")
    bad = problem(acme.post(f"/v1/{resource}/{dead}/retry", json={"note": "x" * 501}), 422,
                  "validation-error")  # fmt: skip
    assert [e["pointer"] for e in bad["errors"]] == ["/note"]
    assert len(triggers(kafka_bootstrap)) == 1  # nothing refused asked for anything
