"""The status resource of a 202 on any instance (decision 0166): a verdict with no job is
answered to the tenant its command id names, and to no other; a command of the asker's
tenant that this instance has not seen answered is `pending` when it was sent after the
instance began reading every verdict (and not so long ago that the judge must have answered
it); one sent before that is looked up on `jobs.verdicts` (decision 0180): its verdict, else
`pending` while the judge may still answer it, else a 404."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from starlette.requests import Request

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.clock import FakeClock
from tickwheel.sdk.command_ids import PENDING_AT_MOST_MS, tagged_command_id
from tickwheel.sdk.job_commands import Verdict
from tickwheel.services.api.keys import Principal
from tickwheel.services.api.problems import Problem
from tickwheel.services.api.routes_job_commands import job_command
from tickwheel.topology import load_topology, topic_name

NOW_MS = 1_796_000_000_000


class Jobs:
    """What the route asks of the jobs client: the verdicts this instance has read."""

    def __init__(self, known: dict[str, Verdict | str], since_ms: int | None) -> None:
        self.known, self.since_ms = known, since_ms

    def command_status(self, command_id: str) -> Verdict | str | None:
        return self.known.get(command_id)

    def verdicts_followed_since_ms(self) -> int | None:
        return self.since_ms


def verdicts_topic(*verdicts: dict[str, Any]) -> MemoryClients:
    """An in-memory broker whose `jobs.verdicts` holds `verdicts`, written now."""
    broker = MemoryBroker(clock=FakeClock(NOW_MS / 1000))
    broker.create_topics(load_topology())
    clients = MemoryClients(broker)
    producer = clients.events()
    for verdict in verdicts:
        producer.send(topic_name("jobs.verdicts"), verdict["command_id"],
                      encode("JobVerdict", verdict))  # fmt: skip
    producer.flush()
    return clients


def ask(jobs: Jobs, command_id: str, tenant: str, clients: Any = None) -> dict[str, Any]:
    backend = SimpleNamespace(jobs=jobs, now_ms=lambda: NOW_MS)
    state = SimpleNamespace(backend=backend, verdict_lookup_clients=clients or verdicts_topic())
    principal = Principal(tenant, "k", frozenset({"read"}))
    scope = {"type": "http", "app": SimpleNamespace(state=state),
             "state": {"principal": principal, "request_id": "r"}, "headers": []}  # fmt: skip
    return job_command(Request(scope), command_id)


def not_found(jobs: Jobs, command_id: str, tenant: str, clients: Any = None) -> bool:
    with pytest.raises(Problem) as refused:
        ask(jobs, command_id, tenant, clients)
    return refused.value.status == 404


def test_a_verdict_with_no_job_is_answered_to_the_tenant_its_id_names_only() -> None:
    command_id = tagged_command_id("acme", NOW_MS - 1000)
    refused = Verdict(command_id, "gone", "not_found", None, None, False, None)
    jobs = Jobs({command_id: refused}, since_ms=NOW_MS - 60_000)
    assert ask(jobs, command_id, "acme")["status"] == "not_found"
    assert not_found(jobs, command_id, "globex")


def test_an_unanswered_command_of_the_askers_tenant_is_pending_on_another_instance() -> None:
    recent = tagged_command_id("acme", NOW_MS - 1000)
    jobs = Jobs({}, since_ms=NOW_MS - 60_000)  # this instance never sent it
    assert ask(jobs, recent, "acme") == {"commandId": recent, "jobId": None, "status": "pending"}
    assert not_found(jobs, recent, "globex")
    # Sent before this instance read every verdict, its verdict not on jobs.verdicts (looked
    # up there, decision 0180): the judge may still answer it.
    earlier = tagged_command_id("acme", NOW_MS - 120_000)
    assert ask(jobs, earlier, "acme")["status"] == "pending"
    # Older than the judge's command TTL: answered (expired) long ago, whatever it was.
    ancient = Jobs({}, since_ms=NOW_MS - 2 * PENDING_AT_MOST_MS)
    assert not_found(ancient, tagged_command_id("acme", NOW_MS - PENDING_AT_MOST_MS), "acme")
    # An id that names no tenant (not made by a writer) is nobody's.
    assert not_found(jobs, "5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10", "acme")
    assert not_found(jobs, recent, "globex")  # nor to another tenant, when looked up


def test_a_verdict_written_before_this_instance_followed_is_looked_up_for_its_tenant() -> None:
    """Decision 0180: the verdict of a command sent (and judged) before this instance began
    reading jobs.verdicts is found there, by the command's id, for the tenant it names."""
    command_id = tagged_command_id("acme", NOW_MS - 120_000)
    verdict = {"command_id": command_id, "job_id": "gone", "outcome": "deleted",
               "current_version": None, "definition": None, "judged_at": NOW_MS - 119_000,
               "idempotency_recorded": False, "detail": None}  # fmt: skip
    other = {**verdict, "command_id": tagged_command_id("acme", NOW_MS - 100_000)}
    clients = verdicts_topic(other, verdict)
    jobs = Jobs({}, since_ms=NOW_MS - 60_000)  # began following after both were written
    answer = ask(jobs, command_id, "acme", clients)
    assert (answer["commandId"], answer["status"], answer.get("job")) == (command_id, "deleted",
                                                                          None)  # fmt: skip
    assert not_found(jobs, command_id, "globex", clients)
