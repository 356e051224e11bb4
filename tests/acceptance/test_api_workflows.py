"""Seed 000's workflow calls against the API in a subprocess, over a real timer, orchestrator
and worker: the seed's `POST /workflows` body literally, a failed step retried with
`POST /executions/{id}/steps/{stepId}/retry` (its next attempt reuses the step's execution
id), and the approval decided through `POST /approvals/{token}` with the `approve` scope.

The retried step is a failed one (its instance failed; the retry reopens it), not a running
one: retrying a running step cancels its attempt by execution id, and the worker then also
skips the next attempt, which has the same id (a worker-side race, reported, not ours).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.api_handlers import RETRIED_PREFIX
from tests.acceptance.api_process import issue_key, start_api
from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import WorkflowStack, step_requests, workflow_env
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.services.api.workflow_models import SEED_WORKFLOW
from tickwheel.stack.broker import free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(600)]

APPROVAL_KEYS = "k1:acceptance-secret"
# Literally seed 000 §3's body (the model module's copy is checked against it below).
SEED_BODY: dict[str, Any] = {
    "definitionId": "video_publish", "definitionVersion": 7,
    "steps": [{"id": "probe", "type": "probe_source"},
              {"id": "encode_480", "type": "encode", "dependsOn": ["probe"]},
              {"id": "approve", "type": "human_approval", "dependsOn": ["encode_480"],
               "timeout": "72h", "onTimeout": "escalate"}],
    "onFailure": "compensate",
}  # fmt: skip


@pytest.fixture
def base(applied_topology: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[str]:
    env = workflow_env(kafka_bootstrap, applied_topology, TICKWHEEL_APPROVAL_KEYS=APPROVAL_KEYS)
    stack = WorkflowStack(tmp_path, env)
    stack.add("timer", "timer")
    stack.add("orchestrator", "orchestrator")
    stack.add("worker", "worker", "--concurrency", "4", "--shutdown-grace", "2",
              "--module", "tests.acceptance.api_handlers")  # fmt: skip
    for process in stack.processes.values():
        process.start()
    port = free_port()
    api = start_api(port, tmp_path / "api.log", TICKWHEEL_APPROVAL_KEYS=APPROVAL_KEYS)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        api.send_signal(signal.SIGTERM)
        api.wait(timeout=20)
        stack.stop()


def _timeline(client: httpx.Client, workflow_id: str) -> dict[str, Any]:
    answer = client.get(f"/workflows/{workflow_id}")
    return answer.json() if answer.status_code == 200 else {}


def _story(client: httpx.Client, workflow_id: str) -> list[Any]:
    """The timeline's events in short, for a failed assertion's message."""
    events = _timeline(client, workflow_id).get("events", [])
    return [(e["event_type"], e.get("step_id"), e.get("attempt"), e.get("actor"), e.get("error"))
            for e in events]  # fmt: skip


def _step(client: httpx.Client, workflow_id: str, step: str) -> dict[str, Any]:
    return dict(_timeline(client, workflow_id).get("steps", {}).get(step) or {})


def test_the_seed_workflow_runs_with_a_step_retry_and_an_approval_over_http(
    base: str, kafka_bootstrap: str
) -> None:
    assert SEED_BODY == SEED_WORKFLOW
    writer = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    approver = {"Authorization": f"Bearer {issue_key('acme', 'approve')}"}
    other = {"Authorization": f"Bearer {issue_key('globex', 'admin')}"}
    flows = WorkflowsClient(kafka_bootstrap, keys={"k1": b"acceptance-secret"})
    with httpx.Client(base_url=base, headers=writer, timeout=60) as client:
        # The seed's body, literally: published, then an instance that waits for approval.
        started = client.post("/workflows", json=SEED_BODY)
        assert started.status_code == 202, started.text
        seeded = started.json()["workflowId"]
        assert started.headers["location"] == f"/v1/workflows/{seeded}"
        # The same steps with onFailure "fail", under a name whose encode fails once for good:
        # the instance fails (no compensation), and the operator retries the failed step.
        strict = {**SEED_BODY, "definitionId": "video_publish_strict", "onFailure": "fail",
                  "workflowId": f"{RETRIED_PREFIX}1"}  # fmt: skip
        assert client.post("/workflows", json=strict).status_code == 202
        retried_id = strict["workflowId"]

        assert wait_until(lambda: _step(client, seeded, "approve").get("status") == "waiting",
                          120), _story(client, seeded)  # fmt: skip
        assert httpx.get(f"{base}/workflows/{seeded}", headers=other,
                         timeout=30).status_code == 404  # fmt: skip
        listed = httpx.get(f"{base}/workflows", headers=other, timeout=30).json()["items"]
        assert seeded not in [w["workflowId"] for w in listed]
        assert seeded in [w["workflowId"] for w in client.get("/workflows").json()["items"]]
        # The stream over the real server (httptools and uvloop, decision 0167): the timeline
        # is flushed as its own chunk while the stream stays open, then it ends at its timeout.
        with client.stream("GET", f"/v1/workflows/{seeded}/events?timeout=3&interval=0.5") as sse:
            assert sse.headers["content-type"].startswith("text/event-stream")
            chunks = sse.iter_text()
            first = next(chunks)
            rest = "".join(chunks)
        assert first.startswith("event: timeline") and "event: end" not in first, first
        assert rest.rstrip().endswith('event: end\ndata: {"reason": "timeout"}'), rest[-200:]

        assert wait_until(lambda: _timeline(client, retried_id).get("status") == "failed", 120), (
            _story(client, retried_id))  # fmt: skip
        retried = client.post(f"/executions/{retried_id}/steps/encode_480/retry")
        assert retried.status_code == 202, retried.text
        assert wait_until(lambda: _step(client, retried_id, "approve").get("status")
                          == "waiting", 120), _story(client, retried_id)  # fmt: skip
        encode = _step(client, retried_id, "encode_480")
        assert encode["status"] == "succeeded" and encode["attempt"] == 2, encode
        attempts = [r for r in step_requests(kafka_bootstrap)
                    if r["step_id"] == "encode_480" and r["workflow_id"] == retried_id]  # fmt: skip
        assert sorted(r["attempt"] for r in attempts) == [1, 2], attempts
        assert len({r["execution_id"] for r in attempts}) == 1, "the retry got a new id"
        assert encode["output"]["execution_id"] == attempts[0]["execution_id"]
        story = _story(client, retried_id)
        assert any(e[0] == "step_retried" and e[3].startswith("api:acme/") for e in story), story

        # The operator's link for the seed instance's approval; only an approve key decides.
        token = flows.approval_token(seeded, "approve")
        decision = {"decision": "approve", "note": "checked the 480p cut"}
        assert client.post(f"/approvals/{token}", json=decision).status_code == 403
        assert httpx.post(f"{base}/approvals/{token}", json=decision, headers=other,
                          timeout=30).status_code == 403  # fmt: skip
        approved = httpx.post(f"{base}/v1/approvals/{token}", json=decision, headers=approver,
                              timeout=30)  # fmt: skip
        assert approved.status_code == 202, approved.text
        assert approved.json()["workflowId"] == seeded

        assert wait_until(lambda: _timeline(client, seeded).get("status") == "succeeded",
                          120), _story(client, seeded)  # fmt: skip
        story = _story(client, seeded)
        assert any(e[0] == "approval_approved" and e[3].startswith("api:acme/") for e in story)
        again = httpx.post(f"{base}/approvals/{token}", json=decision, headers=approver,
                           timeout=30)  # fmt: skip
        assert again.status_code == 409 and again.json()["code"] == "approval-closed"
