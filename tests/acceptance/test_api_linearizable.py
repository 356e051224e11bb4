"""Issue 13's contract: 50 rounds of two clients patching one job with the same
`expectedVersion` give exactly one 200 and one 409 each — against the API in a subprocess,
as it runs in the local stack (one instance; across instances see decisions 0099 and 0101)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.acceptance.api_process import issue_key, start_api
from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(600)]

ROUNDS = 50


@pytest.fixture
def base(applied_topology: str, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = start_api(port, tmp_path / "api.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def test_two_clients_patching_with_the_same_expected_version_get_one_200_and_one_409(
    base: str,
) -> None:
    auth = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    clients = [httpx.Client(base_url=base, headers=auth, timeout=60) for _ in range(2)]
    created = clients[0].post("/v1/jobs", json={**SEED_CRON, "jobId": "contended"})
    assert created.status_code == 201, created.text
    outcomes: list[list[int]] = []
    try:
        for round_ in range(ROUNDS):
            version = clients[0].get("/v1/jobs/contended").json()["version"]
            start = threading.Barrier(2, timeout=30)
            statuses: list[int] = []

            def patch(who: int, *, _v: int = version, _b: threading.Barrier = start,
                      _s: list[int] = statuses, _r: int = round_) -> None:  # fmt: skip
                body = {"expectedVersion": _v, "labels": {"round": str(_r), "by": str(who)}}
                _b.wait()  # both requests leave together, each having read the same version
                _s.append(clients[who].patch("/v1/jobs/contended", json=body).status_code)

            threads = [threading.Thread(target=patch, args=(who,)) for who in (0, 1)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            outcomes.append(sorted(statuses))
        final = clients[0].get("/v1/jobs/contended").json()
    finally:
        for client in clients:
            client.close()
    assert outcomes == [[200, 409]] * ROUNDS, [(i, o) for i, o in enumerate(outcomes)
                                               if o != [200, 409]]  # fmt: skip
    assert final["version"] == 1 + ROUNDS, "every round made exactly one version"
