"""The console's workflow pages through the ASGI client, over a stand-in for the SDK's
workflow client: the DAG of a 200-step instance, step states in words, a stuck step marked,
and approve/retry sent with the operator's name and a required note."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import MemoryJobs
from tickwheel.clock import FakeClock
from tickwheel.sdk.workflows import UnknownWorkflow, WorkflowTimeline
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import mount

NOW_S = 1_798_804_800.0
NOW_MS = int(NOW_S * 1000)


def chain_document(steps: int) -> dict[str, Any]:
    body: list[dict[str, Any]] = [{"id": "s000", "type": "noop"}]
    for n in range(1, steps - 1):
        body.append({"id": f"s{n:03d}", "type": "noop", "dependsOn": [f"s{n - 1:03d}"],
                     "expectedDuration": "1m"})  # fmt: skip
    body.append({"id": "sign-off", "kind": "approval", "dependsOn": [f"s{steps - 2:03d}"]})
    return {"definitionId": "big", "version": 1, "steps": body}


class FakeWorkflows:
    """What the console calls on `WorkflowsClient`, recording the writes."""

    def __init__(self, document: dict[str, Any], steps: dict[str, dict[str, Any]]) -> None:
        self.document = document
        self.steps = steps
        self.sent: list[tuple[Any, ...]] = []

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        return [{"workflowId": "wf-1", "definitionId": "big", "definitionVersion": 1,
                 "status": "running", "seq": 7, "updatedAt": NOW_MS}]  # fmt: skip

    def get(self, workflow_id: str) -> WorkflowTimeline:
        if workflow_id != "wf-1":
            raise UnknownWorkflow("instance", workflow_id)
        events = [{"seq": 1, "event_time": NOW_MS - 1000, "event_type": "started",
                   "step_id": None, "attempt": None, "actor": "api", "error": None}]  # fmt: skip
        return WorkflowTimeline("wf-1", "big", 1, "running", self.steps, events)

    def definitions(self, definition_id: str | None = None) -> dict[tuple[str, int], Any]:
        return {("big", 1): self.document}

    def approval_token(self, workflow_id: str, step: str) -> str:
        return f"token:{workflow_id}:{step}"

    def approve(self, token: str, *, actor: str, note: str = "") -> None:
        self.sent.append(("approve", token, actor, note))

    def reject(self, token: str, *, actor: str, note: str = "") -> None:
        self.sent.append(("reject", token, actor, note))

    def retry_step(self, workflow_id: str, step: str, *, actor: str) -> None:
        self.sent.append(("retry", workflow_id, step, actor))

    def complete_step(self, workflow_id: str, step: str, output: Any = None, *, actor: str) -> None:
        self.sent.append(("complete", workflow_id, step, actor))

    def skip_step(self, workflow_id: str, step: str, *, actor: str) -> None:
        self.sent.append(("skip", workflow_id, step, actor))

    def cancel(self, workflow_id: str, *, actor: str, reason: str = "") -> None:
        self.sent.append(("cancel", workflow_id, actor, reason))


@pytest.fixture
def flows() -> FakeWorkflows:
    steps = {f"s{n:03d}": {"status": "succeeded", "attempt": 1, "startedAt": NOW_MS - 9_000_000,
                           "endedAt": NOW_MS - 8_000_000} for n in range(197)}  # fmt: skip
    steps["s197"] = {"status": "running", "attempt": 2, "startedAt": NOW_MS - 600_000}
    steps["s198"] = {"status": "pending"}
    steps["sign-off"] = {"status": "waiting", "round": 1, "startedAt": NOW_MS - 1000}
    steps["s198"] = {"status": "succeeded", "attempt": 1, "startedAt": NOW_MS - 5000}
    return FakeWorkflows(chain_document(200), steps)


@pytest.fixture
def client(flows: FakeWorkflows, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")
    clock = FakeClock(NOW_S)
    app = FastAPI()
    app.state.backend = Backend(jobs=MemoryJobs(clock), clock=clock)
    mount(app)
    app.state.console_alerts = lambda _b: []
    app.state.console_workflows = lambda _b: flows
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_200_step_instance_shows_its_dag_with_every_step_state_in_words(
    client: TestClient,
) -> None:
    page = client.get("/console/workflows/wf-1")
    assert page.status_code == 200, page.text
    assert page.text.count('<g class="step ') == 200
    assert page.text.count('<line class="edge"') == 199
    assert 'data-step="sign-off" data-state="waiting"' in page.text
    # s197 runs for 10 minutes against an expected minute: stuck, said in words.
    assert 'data-step="s197" data-state="running (stuck)"' in page.text
    assert '<tr data-step="s197" data-state="running">' in page.text
    assert '<strong class="stuck">stuck</strong>' in page.text
    listing = client.get("/console/workflows")
    assert 'href="/console/workflows/wf-1"' in listing.text


def test_approving_needs_a_note_and_sends_the_operators_name(
    client: TestClient, flows: FakeWorkflows
) -> None:
    path = "/console/workflows/wf-1/steps/sign-off/approve"
    refused = client.post(path, data={"note": "", "by": "ana"})
    assert refused.status_code == 422 and "reason: required" in refused.text
    assert flows.sent == []
    done = client.post(path, data={"note": "looks right", "by": "ana"}, follow_redirects=False)
    assert done.status_code == 303
    assert flows.sent == [("approve", "token:wf-1:sign-off", "console:ana", "looks right")]
    client.post("/console/workflows/wf-1/steps/s197/retry", data={"note": "flaky", "by": "ana"})
    assert flows.sent[-1] == ("retry", "wf-1", "s197", "console:ana")


def test_an_unknown_instance_is_a_404_page(client: TestClient) -> None:
    page = client.get("/console/workflows/nope")
    assert page.status_code == 404
    assert "nope" in page.text


def test_a_tenants_key_decides_and_retries_only_its_own_workflows_steps(
    flows: FakeWorkflows,
) -> None:
    from tickwheel.core.workflow.approval import ApprovalClaim, sign_approval
    from tickwheel.services.api.console.access import ScopedWorkflows

    flows.document = {**flows.document, "tenantId": "acme"}
    # A decision carries a token, not a workflow id: the tenant must own the token's workflow.
    token = sign_approval(ApprovalClaim("wf-1", "sign-off", 1, NOW_MS + 60_000), "k1", b"secret")
    acme = ScopedWorkflows(flows, "acme")
    acme.approve(token, actor="console:ana", note="fine")
    acme.retry_step("wf-1", "s197", actor="console:ana")
    assert flows.sent == [("approve", token, "console:ana", "fine"),
                          ("retry", "wf-1", "s197", "console:ana")]  # fmt: skip
    globex = ScopedWorkflows(flows, "globex")
    refused = [
        lambda: globex.approve(token, actor="console:eve", note="mine now"),
        lambda: globex.reject(token, actor="console:eve", note="mine now"),
        lambda: globex.approval_token("wf-1", "sign-off"),
        lambda: globex.retry_step("wf-1", "s197", actor="console:eve"),
        lambda: globex.get("wf-1"),
        lambda: acme.approve("not-a-token", actor="console:ana", note="?"),
    ]
    for call in refused:
        with pytest.raises(UnknownWorkflow):
            call()
    assert len(flows.sent) == 2
    assert globex.list() == [] and [r["workflowId"] for r in acme.list()] == ["wf-1"]
