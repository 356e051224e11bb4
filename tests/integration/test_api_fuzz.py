"""Schemathesis against the served OpenAPI document, the app in-process over the real broker.

Every documented operation gets a few generated requests, valid and not: none may answer 5xx,
and every answer must conform to the document (status, content type, body schema). Examples
are few and unhurried (no deadline), so the run is bounded by count, not by timing luck.

The history is an empty reader here (every timeline is a 404): the timeline itself is
covered by the history tests; the API's part is the 404 problem and the shape.

`positive_data_acceptance` is left out: a schema-valid body can still be a job the core
refuses (no schedule, a cron that never fires), and that 422 is the contract. Every other
default check runs, `negative_data_rejection` among them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tickwheel.ports.history import QueryResult
from tickwheel.services.api.app import OPENAPI_URL, create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.door import Door
from tickwheel.services.api.keys import create_key
from tickwheel.services.api.workflow_view import FollowedWorkflows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


EXAMPLES = 12
# Scenarios for the stateful phase: enough for chains from a create to reach the job's calls.
STATEFUL_EXAMPLES = 40


class EmptyHistory:
    def query(self, sql: str, params: Any = None) -> QueryResult:
        return QueryResult(columns=(), types=())

    def close(self) -> None:
        pass


@pytest.fixture
def token(applied_topology: str, kafka_bootstrap: str) -> str:
    """A seeded key with every scope; schemathesis' `ignored_auth` check calls without it too."""
    scopes = ["read", "write", "admin", "approve"]
    return create_key("fuzz", scopes, bootstrap=kafka_bootstrap, now_ms=1)[0]


@pytest.fixture
def api_schema(applied_topology: str, kafka_bootstrap: str, token: str) -> Iterator[Any]:
    # The backend and workflow client the service runs (reads from followed views,
    # decisions 0139 and 0140), with an empty history.
    backend = Backend.from_env(kafka_bootstrap)
    backend.open_history = EmptyHistory
    door = Door.open(kafka_bootstrap, backend.clock.now)  # closed after: its views follow topics
    # Approval keys, so a generated token is judged by the verifier, not refused for want of keys.
    workflows = FollowedWorkflows(kafka_bootstrap, keys={"fuzz": b"fuzz-approval-secret"})
    app = create_app(backend, door, workflows)
    # The key must be known to the app before the run: its key view reads the topic with a
    # bounded wait and then follows it, so on a loaded machine the first read can miss it.
    client = TestClient(app)
    deadline = time.monotonic() + 60
    while client.get("/v1/jobs", headers={"Authorization": f"Bearer {token}"}).status_code == 401:
        assert time.monotonic() < deadline, "the app never accepted the seeded key"
        time.sleep(0.5)
    yield schemathesis.openapi.from_asgi(OPENAPI_URL, app)
    door.close()
    workflows.close()
    backend.jobs.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_5xx_and_every_answer_conforms(
    api_schema: Any, token: str, mode: GenerationMode
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 22
    labels = {operation.label for operation in operations}
    assert {"POST /v1/workflows", "GET /v1/workflows/{workflow_id}",
            "POST /v1/executions/{workflow_id}/steps/{step_id}/retry",
            "POST /v1/executions/{execution_id}/retry",
            "POST /v1/approvals/{token}"} <= labels, sorted(labels)  # fmt: skip
    exercised = 0
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            # A negative case that dropped the key is meant to be refused (401): leave it out.
            sent = case.headers or {}
            keyed = mode is GenerationMode.POSITIVE or "Authorization" in sent
            case.call_and_validate(
                headers=headers if keyed else None, excluded_checks=[positive_data_acceptance]
            )

        try:
            check()
        except Unsatisfiable:
            # Nothing to make invalid: an operation without parameters or body (/healthz).
            assert mode is GenerationMode.NEGATIVE, operation.label
            continue
        exercised += 1
    assert exercised >= 12


def test_stateful_chains_from_created_jobs_conform(api_schema: Any, token: str) -> None:
    """The stateful phase: calls chained through the document's links (a created job's id
    into get, patch, pause, trigger, occurrences, delete), each answer checked as above."""
    headers = {"Authorization": f"Bearer {token}"}
    answered: list[tuple[str, int]] = []

    class Keyed(api_schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            # A negative step may have mutated or dropped the key on purpose: send it as made.
            negative = case.meta is not None and case.meta.generation.mode.is_negative
            return {} if negative else {"headers": headers}

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            answered.append((case.operation.label, response.status_code))

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, excluded_checks=[positive_data_acceptance],
                                   transport_kwargs=kwargs)  # fmt: skip

    Keyed.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=8,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    # The run was keyed (some calls were judged, not all refused at the door). Whether its
    # random chains reach a created job is luck (few generated bodies are jobs the core
    # accepts): the links themselves are followed deterministically by the test below.
    counts = sorted(Counter(answered).items())
    assert any(status < 300 for _, status in answered), counts


def _example(raw: dict[str, Any], path: str, method: str) -> Any:
    content = raw["paths"][path][method].get("requestBody", {}).get("content", {})
    examples = content.get("application/json", {}).get("examples", {})
    return next(iter(examples.values()))["value"] if examples else None


def test_every_link_from_a_created_job_answers_and_conforms(api_schema: Any, token: str) -> None:
    """The document's links from `POST /v1/jobs`' 201, followed from a job created with the
    document's own example: each target answers 2xx for that job and conforms."""
    headers = {"Authorization": f"Bearer {token}"}
    raw = api_schema.raw_schema
    created = api_schema["/v1/jobs"]["POST"].Case(body=_example(raw, "/v1/jobs", "post"))
    response = created.call_and_validate(headers=headers)
    assert response.status_code == 201, response.text
    job_id = response.json()["jobId"]
    by_id = {op["operationId"]: (path, method)
             for path, ops in raw["paths"].items() for method, op in ops.items()}  # fmt: skip
    links = raw["paths"]["/v1/jobs"]["post"]["responses"]["201"]["links"]
    # Delete last: every other link needs the job to exist.
    followed = sorted(links.items(), key=lambda item: item[0] == "DeleteJob")
    assert {"GetJob", "PauseJob", "ResumeJob", "TriggerJob", "DeleteJob"} <= set(links)
    for name, link in followed:
        path, method = by_id[link["operationId"]]
        query = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}
        parts: dict[str, Any] = {"path_parameters": dict.fromkeys(link["parameters"], job_id)}
        if (body := _example(raw, path, method)) is not None:
            if isinstance(body, dict) and "expectedVersion" in body:  # the job as it is now
                current = api_schema["/v1/jobs/{job_id}"]["GET"].Case(
                    path_parameters={"job_id": job_id}).call(headers=headers)  # fmt: skip
                body = {**body, "expectedVersion": current.json()["version"]}
            parts["body"] = body
        if name == "JobOccurrences":
            parts["query"] = query
        case = api_schema[path][method.upper()].Case(**parts)
        answer = case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])
        assert answer.status_code < 300, (name, answer.status_code, answer.text)
