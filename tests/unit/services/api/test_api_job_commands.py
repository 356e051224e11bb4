"""The status resource of a 202 on any instance (decision 0166): a verdict with no job is
answered to the tenant its command id names, and to no other; a command of the asker's
tenant that this instance has not seen answered is `pending` when it was sent after the
instance began reading every verdict (and not so long ago that the judge must have answered
it), else a 404."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from starlette.requests import Request

from tickwheel.sdk.command_ids import PENDING_AT_MOST_MS, tagged_command_id
from tickwheel.sdk.job_commands import Verdict
from tickwheel.services.api.keys import Principal
from tickwheel.services.api.problems import Problem
from tickwheel.services.api.routes_job_commands import job_command

NOW_MS = 1_796_000_000_000


class Jobs:
    """What the route asks of the jobs client: the verdicts this instance has read."""

    def __init__(self, known: dict[str, Verdict | str], since_ms: int | None) -> None:
        self.known, self.since_ms = known, since_ms

    def command_status(self, command_id: str) -> Verdict | str | None:
        return self.known.get(command_id)

    def verdicts_followed_since_ms(self) -> int | None:
        return self.since_ms


def ask(jobs: Jobs, command_id: str, tenant: str) -> dict[str, Any]:
    backend = SimpleNamespace(jobs=jobs, now_ms=lambda: NOW_MS)
    principal = Principal(tenant, "k", frozenset({"read"}))
    scope = {"type": "http", "app": SimpleNamespace(state=SimpleNamespace(backend=backend)),
             "state": {"principal": principal, "request_id": "r"}, "headers": []}  # fmt: skip
    return job_command(Request(scope), command_id)


def not_found(jobs: Jobs, command_id: str, tenant: str) -> bool:
    with pytest.raises(Problem) as refused:
        ask(jobs, command_id, tenant)
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
    # Sent before this instance read every verdict: its verdict may have gone by unread.
    assert not_found(jobs, tagged_command_id("acme", NOW_MS - 120_000), "acme")
    # Older than the judge's command TTL: answered (expired) long ago, whatever it was.
    ancient = Jobs({}, since_ms=NOW_MS - 2 * PENDING_AT_MOST_MS)
    assert not_found(ancient, tagged_command_id("acme", NOW_MS - PENDING_AT_MOST_MS), "acme")
    # An id that names no tenant (not made by a writer) is nobody's.
    assert not_found(jobs, "5b1f0c7e-2a53-4a49-9d4f-0f7d2f1d9a10", "acme")
    assert not_found(Jobs({}, since_ms=None), recent, "acme")  # no writer: nothing followed
