"""Retrying and discarding dead letters over the real broker: the SDK, the CLI and the API's
routes each trigger the letter's job (a `TimerCommand` on `timers.commands`) for a retry and
record a `DeadLetterResolution`, after which the letter lists as resolved; what cannot be
retried unchanged is refused with the reason, and a tenant acts only on its own letters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.api_clients import Connect, connect, jobs, key, problem
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.cli import main
from tickwheel.core.identity import execution_id
from tickwheel.core.timer.execution_records import execution_dead_letter
from tickwheel.sdk.dead_letters import (
    AlreadyResolved,
    DeadLettersClient,
    NotRetryable,
    UnknownDeadLetter,
    read_resolutions,
)
from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.models import SEED_CRON
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration
__all__ = ["connect", "jobs"]  # fixtures, imported for pytest to find
PLAIN = {"type": "noop", "cron": "0 2 * * *", "timezone": "Europe/London"}


def exhausted(job_id: str, version: int, slot: int) -> dict[str, Any]:
    """The dead letter the timer writes when an execution of (job, slot) ran out of attempts."""
    request = {"execution_id": execution_id(job_id, version, slot), "job_id": job_id,
               "priority": "normal", "payload": '{"date": "2026-11-30"}'}  # fmt: skip
    return execution_dead_letter(request, 3, "max_attempts_exhausted", "upstream refused", slot)


def publish_letters(bootstrap: str, *letters: dict[str, Any]) -> None:
    producer = EventProducer(bootstrap)
    for letter in letters:
        producer.send(topic_name("executions.dlq"), letter["job_id"], encode("DeadLetter", letter))
    producer.flush()


def triggers(bootstrap: str) -> list[dict[str, Any]]:
    out = []
    for record in read_to_end(topic_name("timers.commands"), None, bootstrap):
        assert record.value is not None
        out.append(decode(record.value, "TimerCommand")[1])
    return out


def test_a_retry_triggers_the_job_and_resolves_the_letter(
    jobs: JobsClient, kafka_bootstrap: str
) -> None:
    job = jobs.create({**PLAIN, "jobId": "nightly"})
    letter = exhausted("nightly", job["version"], 1_000)
    junk = dead_letter_record("jobs.definitions", 2, 41, "nightly", b"\x00junk", "bad magic",
                              "undecodable", 2_000)  # fmt: skip
    publish_letters(kafka_bootstrap, letter, junk)
    client = DeadLettersClient(kafka_bootstrap, jobs=jobs)

    listed = {d["dead_letter_id"]: d for d in client.letters()}
    assert listed[letter["dead_letter_id"]]["retryable"] is True
    assert listed[junk["dead_letter_id"]]["retryable"] is False

    done = client.retry(letter["dead_letter_id"], by="ops:ana", note="upstream fixed")
    [command] = triggers(kafka_bootstrap)
    assert (command["kind"], command["job_id"]) == ("trigger", "nightly")
    assert done["retry_command_id"] == command["command_id"]
    assert done["retry_execution_id"] == execution_id("nightly", job["version"],
                                                      command["requested_at"])  # fmt: skip
    assert read_resolutions(kafka_bootstrap)[letter["dead_letter_id"]]["action"] == "retried"
    unresolved = [d["dead_letter_id"] for d in client.letters(include_resolved=False)]
    assert unresolved == [junk["dead_letter_id"]]

    with pytest.raises(AlreadyResolved):
        client.retry(letter["dead_letter_id"], by="ops:ana")
    with pytest.raises(NotRetryable, match="could not be decoded"):
        client.retry(junk["dead_letter_id"], by="ops:ana")
    with pytest.raises(UnknownDeadLetter):
        client.discard("no-such-letter", by="ops:ana", note="gone")
    assert len(triggers(kafka_bootstrap)) == 1  # nothing refused sent anything

    client.discard(junk["dead_letter_id"], by="ops:ana", note="test junk")
    assert client.letters(include_resolved=False) == []


def test_the_cli_lists_retries_and_discards(
    jobs: JobsClient, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job = jobs.create({**PLAIN, "jobId": "cli-job"})
    first, second = exhausted("cli-job", job["version"], 1), exhausted("cli-job", job["version"], 2)
    step = {**exhausted("__wf/wf-1/0", 1, 3), "job_id": "__wf/wf-1/0"}
    publish_letters(kafka_bootstrap, first, second, step)

    assert main(["dead-letters", "retry", first["dead_letter_id"], step["dead_letter_id"]]) == 1
    said = capsys.readouterr().out
    assert f"{first['dead_letter_id']}: retried" in said
    assert f"{step['dead_letter_id']}: refused" in said and "workflow 'wf-1'" in said
    with pytest.raises(SystemExit) as usage:  # --note is required to discard
        main(["dead-letters", "discard", second["dead_letter_id"]])
    assert usage.value.code == 2
    capsys.readouterr()
    assert main(["dead-letters", "discard", second["dead_letter_id"], "--note", "dup"]) == 0
    capsys.readouterr()
    assert main(["dead-letters", "list", "--unresolved", "--json"]) == 0
    left = json.loads(capsys.readouterr().out)
    assert [d["dead_letter_id"] for d in left] == [step["dead_letter_id"]]


def test_the_api_retries_and_discards_only_the_tenants_letters(
    connect: Connect, kafka_bootstrap: str
) -> None:
    acme = connect(key(kafka_bootstrap, "acme", "admin"))
    created = acme.post("/v1/jobs", json={**SEED_CRON, "jobId": "acme-job"}).json()
    letters = [exhausted("acme-job", created["version"], n) for n in (1, 2, 3)]
    publish_letters(kafka_bootstrap, *letters)
    ids = [d["dead_letter_id"] for d in letters]

    writer = connect(key(kafka_bootstrap, "acme", "write"))
    problem(writer.post(f"/v1/dead-letters/{ids[0]}/retry"), 403, "forbidden")
    globex = connect(key(kafka_bootstrap, "globex", "admin"))
    problem(globex.post(f"/v1/dead-letters/{ids[0]}/retry"), 404, "not-found")

    retried = acme.post(f"/v1/dead-letters/{ids[0]}/retry", json={"note": "fixed"})
    assert retried.status_code == 202, retried.text
    assert retried.json()["action"] == "retried" and retried.json()["tenant_id"] == "acme"
    again = problem(acme.post(f"/v1/dead-letters/{ids[0]}/retry"), 409, "dead-letter-resolved")
    assert again["resolution"]["action"] == "retried"
    problem(acme.post(f"/v1/dead-letters/{ids[1]}/discard", json={}), 422, "validation-error")

    bulk = acme.post("/v1/dead-letters/discard",
                     json={"ids": [ids[0], ids[1], ids[2], "nope"], "note": "bulk"})  # fmt: skip
    assert bulk.status_code == 200, bulk.text
    statuses = [(r["deadLetterId"], r["status"]) for r in bulk.json()["results"]]
    assert statuses == [(ids[0], 409), (ids[1], 200), (ids[2], 200), ("nope", 404)]
    listed = acme.get("/v1/dead-letters").json()["items"]
    assert {d["dead_letter_id"] for d in listed} == set(ids)  # resolved letters still read
    resolutions = read_resolutions(kafka_bootstrap)
    assert {i: resolutions[i]["action"] for i in ids} == {
        ids[0]: "retried", ids[1]: "discarded", ids[2]: "discarded"}  # fmt: skip
