"""What the API's integration tests share: apps over the test's topics, keys, problem checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tickwheel.sdk.jobs import JobsClient
from tickwheel.services.api.app import create_app
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.door import Door
from tickwheel.services.api.keys import create_key

PROBLEM = "application/problem+json"
Connect = Callable[..., TestClient]


@pytest.fixture
def jobs(applied_topology: str, kafka_bootstrap: str) -> JobsClient:
    return JobsClient(kafka_bootstrap)


@pytest.fixture
def connect(jobs: JobsClient, kafka_bootstrap: str) -> Iterator[Connect]:
    """`connect(token, door=None, clock=None, history=None)`: a client of a fresh app (its own
    door, read from the topics: a fresh app is what an API restart gives)."""
    opened: list[Door] = []

    def make(
        token: str | None = None, door: Door | None = None, clock: Any = None, history: Any = None
    ) -> TestClient:
        backend = Backend(jobs=jobs, bootstrap=kafka_bootstrap)
        if clock is not None:
            backend.clock = clock
        if history is not None:
            backend.open_history = history
        door = door or Door.open(kafka_bootstrap, backend.clock.now)
        opened.append(door)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return TestClient(create_app(backend, door), raise_server_exceptions=False, headers=headers)

    yield make
    for door in opened:
        door.close()


def key(kafka_bootstrap: str, tenant: str, *scopes: str) -> str:
    return create_key(tenant, list(scopes), bootstrap=kafka_bootstrap, now_ms=1)[0]


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["requestId"] == response.headers["x-request-id"]
    return body
