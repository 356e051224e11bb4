"""The API's workflow and approval routes over the real broker and a real orchestrator
process (no timer or worker: steps stay where the fold put them, which is what these checks
need): the seed's body published and started, tenancy, scopes, repairs, approvals, the SSE.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.api_clients import Connect, connect, jobs, key, problem
from tests.integration.timer_harness import ServiceProcess, wait_until
from tests.integration.workflow_harness import workflow_env, workflow_events
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.ports.history import QueryResult
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.services.api.workflow_models import SEED_WORKFLOW
from tickwheel.services.api.workflow_view import FollowedWorkflows
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
__all__ = ["connect", "jobs"]  # fixtures, imported for pytest to find

KEYS = {"k1": b"api-test-secret"}
APPROVAL_ONLY = {"definitionId": "sign_off", "definitionVersion": 1,
                 "steps": [{"id": "approve", "type": "human_approval", "timeout": "72h"}]}  # fmt: skip


class NoExecutions:
    """A history with no execution in it: every job timeline is not found."""

    def query(self, sql: str, params: Any = None) -> QueryResult:
        return QueryResult(columns=(), types=())

    def close(self) -> None:
        pass


@pytest.fixture
def orchestrator(applied_topology: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[None]:
    process = ServiceProcess("orchestrator", tmp_path / "orchestrator.log",
                             workflow_env(kafka_bootstrap, applied_topology), "orchestrator")  # fmt: skip
    process.start()
    yield
    process.stop()


@pytest.fixture
def flows(kafka_bootstrap: str, applied_topology: str) -> Iterator[WorkflowsClient]:
    """The API's own client: its reads answer from the followed view (decision 0140)."""
    client = FollowedWorkflows(kafka_bootstrap, keys=KEYS, window_s=0.1)
    yield client
    client.close()


@pytest.fixture
def client_for(connect: Connect, flows: WorkflowsClient, kafka_bootstrap: str) -> Any:
    """`client_for(tenant, *scopes)`: a client of the app (with the test's approval keys)."""

    def make(tenant: str, *scopes: str) -> TestClient:
        client = connect(key(kafka_bootstrap, tenant, *scopes), history=NoExecutions)
        client.app.state.workflows = flows  # type: ignore[attr-defined]
        return client

    return make


def _visible(client: TestClient, workflow_id: str, step: str, status: str) -> bool:
    answer = client.get(f"/v1/workflows/{workflow_id}")
    return answer.status_code == 200 and answer.json()["steps"][step]["status"] == status


def _definitions(bootstrap: str) -> list[dict[str, Any]]:
    records = read_to_end(topic_name("workflows.definitions"), None, bootstrap)
    return [decode(r.value, "WorkflowDefinition")[1] for r in records if r.value is not None]


def test_the_seed_body_publishes_its_version_once_and_starts_an_instance_each_time(
    client_for: Any, kafka_bootstrap: str, orchestrator: None
) -> None:
    acme = client_for("acme", "write")
    first = acme.post("/workflows", json=SEED_WORKFLOW)
    assert first.status_code == 202, first.text
    again = acme.post("/v1/workflows", json=SEED_WORKFLOW)
    assert again.status_code == 202, again.text
    assert first.json()["workflowId"] != again.json()["workflowId"]
    assert first.json()["definitionVersion"] == 7
    published = _definitions(kafka_bootstrap)
    assert [(d["definition_id"], d["version"]) for d in published] == [("video_publish", 7)]
    document = json.loads(published[0]["body"])
    assert document["tenantId"] == "acme"
    assert document["steps"][2] == {"id": "approve", "kind": "approval",
                                    "dependsOn": ["encode_480"], "timeout": "72h",
                                    "onTimeout": "escalate"}  # fmt: skip
    # Versions are immutable: another body under v7 is refused, naming the seed's field.
    changed = {**SEED_WORKFLOW, "steps": SEED_WORKFLOW["steps"][:1]}
    refused = problem(acme.post("/workflows", json=changed), 422, "validation-error")
    assert refused["errors"][0]["pointer"] == "/definitionVersion"
    # No steps: an instance of a published version (the latest when none is named).
    bare = acme.post("/workflows", json={"definitionId": "video_publish", "input": {"n": 1}})
    assert bare.status_code == 202 and bare.json()["definitionVersion"] == 7, bare.text
    problem(acme.post("/workflows", json={"definitionId": "nothing_here"}), 404, "not-found")
    workflow_id = first.json()["workflowId"]
    assert wait_until(lambda: _visible(acme, workflow_id, "probe", "running"), 60)
    timeline = acme.get(f"/workflows/{workflow_id}").json()
    assert timeline["status"] == "running" and timeline["definitionVersion"] == 7
    assert set(timeline["steps"]) == {"probe", "encode_480", "approve"}
    assert timeline["events"][0]["event_type"] == "workflow_started"


def test_the_followed_view_answers_as_the_sdks_topic_scans(
    client_for: Any, flows: WorkflowsClient, kafka_bootstrap: str, orchestrator: None
) -> None:
    """Decision 0140: list, get and the definitions from memory equal the SDK's reads of the
    topics to their end, once the view is a window past the last record."""
    acme = client_for("acme", "write")
    started = [acme.post("/workflows", json=SEED_WORKFLOW).json()["workflowId"] for _ in range(3)]
    for workflow_id in started:
        assert wait_until(lambda w=workflow_id: _visible(acme, w, "probe", "running"), 60)
    acme.post(f"/workflows/{started[0]}/cancel", json={"reason": "compare"})
    scans = WorkflowsClient(kafka_bootstrap, keys=KEYS)
    assert wait_until(lambda: scans.get(started[0]).status != "running", 60)

    def same() -> bool:
        return (flows.list() == scans.list()
                and flows.definitions() == scans.definitions()
                and all(flows.get(w) == scans.get(w) for w in started))  # fmt: skip

    # Bounded: the orchestrator may still be writing the cancel's events for a moment.
    assert wait_until(same, 30)


def test_another_tenants_workflow_is_not_found_anywhere(
    client_for: Any, orchestrator: None
) -> None:
    acme, globex = client_for("acme", "write"), client_for("globex", "admin")
    workflow_id = acme.post("/workflows", json=SEED_WORKFLOW).json()["workflowId"]
    assert wait_until(lambda: _visible(acme, workflow_id, "probe", "running"), 60)
    assert workflow_id in [w["workflowId"] for w in acme.get("/workflows").json()["items"]]
    # Seed 000's GET /executions/{id} of a workflow instance is its timeline.
    as_execution = acme.get(f"/executions/{workflow_id}")
    assert as_execution.status_code == 200, as_execution.text
    assert as_execution.json()["workflowId"] == workflow_id
    problem(globex.get(f"/executions/{workflow_id}"), 404, "not-found")
    problem(acme.get("/executions/no-such-thing"), 404, "not-found")
    assert workflow_id not in [w["workflowId"] for w in globex.get("/workflows").json()["items"]]
    for method, path in (
        ("GET", f"/workflows/{workflow_id}"),
        ("GET", f"/workflows/{workflow_id}/events?timeout=1"),
        ("POST", f"/workflows/{workflow_id}/cancel"),
        ("POST", f"/executions/{workflow_id}/steps/probe/retry"),
        ("POST", f"/workflows/{workflow_id}/steps/probe/skip"),
    ):
        problem(globex.request(method, path), 404, "not-found")
    # globex may not start an instance of acme's definition either.
    problem(globex.post("/workflows", json={"definitionId": "video_publish"}), 404, "not-found")
    problem(acme.post(f"/workflows/{workflow_id}/steps/nope/retry"), 404, "not-found")
    reader = client_for("acme", "read")
    problem(reader.post("/workflows", json=SEED_WORKFLOW), 403, "forbidden")
    problem(reader.post(f"/workflows/{workflow_id}/cancel"), 403, "forbidden")


def test_repairs_and_cancel_reach_the_timeline_with_the_keys_actor(
    client_for: Any, kafka_bootstrap: str, orchestrator: None
) -> None:
    acme = client_for("acme", "write")
    workflow_id = acme.post("/workflows", json=SEED_WORKFLOW).json()["workflowId"]
    assert wait_until(lambda: _visible(acme, workflow_id, "probe", "running"), 60)
    completed = acme.post(f"/executions/{workflow_id}/steps/probe/complete",
                        json={"output": {"seconds": 93}})  # fmt: skip
    assert completed.status_code == 202, completed.text
    actor = completed.json()["actor"]
    assert actor.startswith("api:acme/")
    assert wait_until(lambda: _visible(acme, workflow_id, "encode_480", "running"), 60)
    assert acme.get(f"/workflows/{workflow_id}").json()["steps"]["probe"]["output"] == {
        "seconds": 93
    }
    cancelled = acme.post(f"/workflows/{workflow_id}/cancel", json={"reason": "wrong source"})
    assert cancelled.status_code == 202, cancelled.text

    def recorded() -> set[str]:
        return {e["event_type"] for e in workflow_events(kafka_bootstrap)[workflow_id]
                if e["actor"] == actor}  # fmt: skip

    assert wait_until(lambda: {"step_succeeded", "cancel_requested"} <= recorded(), 60), recorded()


def test_an_approval_is_decided_once_with_the_approve_scope_of_its_tenant(
    client_for: Any, flows: WorkflowsClient, kafka_bootstrap: str, orchestrator: None
) -> None:
    acme = client_for("acme", "write")
    workflow_id = acme.post("/workflows", json=APPROVAL_ONLY).json()["workflowId"]
    assert wait_until(lambda: _visible(acme, workflow_id, "approve", "waiting"), 60)
    token = flows.approval_token(workflow_id, "approve")
    decision = {"decision": "reject", "note": "not this cut"}
    problem(acme.post(f"/approvals/{token}", json=decision), 403, "forbidden")
    problem(client_for("globex", "approve").post(f"/approvals/{token}", json=decision), 404,
            "not-found")  # fmt: skip
    approver = client_for("acme", "approve")
    bad = problem(approver.post(f"/approvals/{token[:-2]}xx", json=decision), 422,
                  "validation-error")  # fmt: skip
    assert bad["errors"][0]["parameter"] == "token"
    problem(approver.post(f"/approvals/{token}", json={"decision": "maybe"}), 422,
            "validation-error")  # fmt: skip
    decided = approver.post(f"/approvals/{token}", json=decision)
    assert decided.status_code == 202, decided.text
    assert decided.json() == {"workflowId": workflow_id, "stepId": "approve", "round": 1,
                              "decision": "reject", "actor": decided.json()["actor"]}  # fmt: skip
    assert wait_until(lambda: acme.get(f"/workflows/{workflow_id}").json()["steps"]["approve"]
                      ["status"] == "failed", 60)  # fmt: skip
    problem(approver.post(f"/approvals/{token}", json=decision), 409, "approval-closed")
    rejected = [e for e in workflow_events(kafka_bootstrap)[workflow_id]
                if e["event_type"] == "approval_rejected"]  # fmt: skip
    assert len(rejected) == 1 and rejected[0]["actor"] == decided.json()["actor"]


def test_the_workflow_stream_sends_the_timeline_and_ends_when_it_finishes(
    client_for: Any, flows: WorkflowsClient, orchestrator: None
) -> None:
    acme = client_for("acme", "write")
    workflow_id = acme.post("/workflows", json=APPROVAL_ONLY).json()["workflowId"]
    assert wait_until(lambda: _visible(acme, workflow_id, "approve", "waiting"), 60)
    with acme.stream("GET", f"/v1/workflows/{workflow_id}/events?timeout=1&interval=0.2") as sse:
        assert sse.headers["content-type"].startswith("text/event-stream")
        text = "".join(sse.iter_text())
    assert text.startswith("event: timeline") and '"timeout"' in text
    flows.approve(flows.approval_token(workflow_id, "approve"), actor="test", note="ok")
    with acme.stream("GET", f"/v1/workflows/{workflow_id}/events?timeout=60&interval=0.2") as sse:
        chunks = [c for c in "".join(sse.iter_text()).split("\n\n") if c]
    assert chunks[-1] == 'event: end\ndata: {"reason": "finished"}'
    last = json.loads(chunks[-2].split("data: ", 1)[1])
    assert last["status"] == "succeeded" and last["steps"]["approve"]["status"] == "succeeded"
