"""Issue 13's contract: 50 rounds of two clients patching one job with the same
`expectedVersion` give exactly one 200 and one 409 each — each client on its own API
instance (two subprocesses, as two replicas run), judged by the single writer running as in
the local stack (decisions 0099, 0126). The per-instance lock of decision 0101 could not make
this true. And an idempotent replay across an API restart (SIGKILL, then a fresh process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.acceptance.api_process import issue_key, start_api
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.job_write_path import judge_running
from tickwheel.services.api.models import SEED_CRON
from tickwheel.stack.broker import free_port
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(600)]

ROUNDS = 50


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture
def judge(applied_topology: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[None]:
    """`python -m tickwheel.services.jobwriter`, as the stack runs it, once its group is live."""
    log = (tmp_path / "jobwriter.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "tickwheel.services.jobwriter"],
                               env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not judge_running(kafka_bootstrap):
            assert process.poll() is None, (tmp_path / "jobwriter.log").read_text()
            assert time.monotonic() < deadline, "the judge's group was not live within 90 s"
            time.sleep(0.5)
        yield
    finally:
        stop(process)


@pytest.fixture
def bases(judge: None, tmp_path: Path) -> Iterator[list[str]]:
    """Two API instances over the same topics."""
    ports = [free_port(), free_port()]
    processes = [start_api(port, tmp_path / f"api-{n}.log") for n, port in enumerate(ports)]
    try:
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        for process in processes:
            stop(process)


def test_two_api_instances_patching_with_the_same_expected_version_get_one_200_and_one_409(
    bases: list[str], kafka_bootstrap: str
) -> None:
    auth = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    clients = [httpx.Client(base_url=base, headers=auth, timeout=60) for base in bases]
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
    judged = [decode(r.value or b"", "JobVerdict")[1]
              for r in read_to_end(topic_name("jobs.verdicts"), None, kafka_bootstrap)]  # fmt: skip
    # Every write was judged (none took the direct path), each once; a 409 was answered by
    # the judge, or before any command when the API's catalogue had already seen the winner.
    outcomes_judged = [v["outcome"] for v in judged if v["job_id"] == "contended"]
    assert outcomes_judged.count("created") == 1
    assert outcomes_judged.count("updated") == ROUNDS
    assert set(outcomes_judged) <= {"created", "updated", "version_conflict"}


def test_a_keyed_create_replays_across_an_api_restart(judge: None, tmp_path: Path) -> None:
    auth = {"Authorization": f"Bearer {issue_key('acme', 'write')}"}
    port = free_port()
    body, key = {**SEED_CRON, "jobId": "replayed"}, {"Idempotency-Key": "restart-1"}
    first = start_api(port, tmp_path / "api-first.log")
    try:
        created = httpx.post(f"http://127.0.0.1:{port}/v1/jobs", json=body,
                             headers={**auth, **key}, timeout=60)  # fmt: skip
    finally:
        first.kill()  # no graceful stop: nothing it held in memory survives
        first.wait(timeout=30)
    assert created.status_code == 201, created.text
    second = start_api(port, tmp_path / "api-second.log")
    try:
        replay = httpx.post(f"http://127.0.0.1:{port}/v1/jobs", json=body,
                            headers={**auth, **key}, timeout=60)  # fmt: skip
        again = httpx.get(f"http://127.0.0.1:{port}/v1/jobs/replayed", headers=auth, timeout=60)
    finally:
        stop(second)
    assert replay.status_code == 201
    assert replay.headers.get("idempotent-replayed") == "true"
    assert replay.json() == created.json()
    assert again.json()["version"] == 1, "the replay made nothing twice"
