"""`async def` handlers through a real worker process and the real broker: run natively on
the lane's event loop, each leased before it runs and ending with its outcome; a cancel
reaches a waiting coroutine."""

from __future__ import annotations

import argparse
import json
import signal
from typing import Any

import pytest

from tickwheel.cli import executions as executions_cli

from .test_worker import events, finished, make_request, publish, types_of, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

MODULE = ("--module", "tests.integration.worker_async_handlers")


def test_async_handlers_run_on_the_loop_and_report_their_outcomes(
    kafka_bootstrap: str, worker: Any
) -> None:
    waits = [make_request("async_wait", {"seconds": 0.5}) for _ in range(20)]
    publish(kafka_bootstrap, waits)
    process = worker(*MODULE, "--concurrency", "normal=20", "--shutdown-grace", "5")
    grouped = wait_for(
        finished(kafka_bootstrap, [r["execution_id"] for r in waits]), 45, "the async outcomes"
    )
    for req in waits:
        evts = grouped[req["execution_id"]]
        assert types_of(evts) == ["leased", "succeeded"], evts
        assert json.loads(evts[1]["details"])["result"] == {"waited": 0.5}
    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 0


def test_a_cancel_reaches_a_waiting_coroutine(kafka_bootstrap: str, worker: Any) -> None:
    long = make_request("async_wait", {"seconds": 60}, lease_seconds=3, heartbeat_seconds=1)
    publish(kafka_bootstrap, [long])
    worker(*MODULE)

    # Cancelled once the worker has heartbeated it: the coroutine is waiting, held by its lease.
    def heartbeated() -> bool:
        return "heartbeat" in types_of(events(kafka_bootstrap).get(long["execution_id"], []))

    wait_for(heartbeated, 30, "a heartbeat")
    parser = argparse.ArgumentParser()
    executions_cli.register(parser.add_subparsers())
    args = parser.parse_args(["executions", "cancel", long["execution_id"], "--reason", "test"])
    assert args.handler(args) == 0
    grouped = wait_for(finished(kafka_bootstrap, [long["execution_id"]]), 30, "the cancel")
    evts = grouped[long["execution_id"]]
    kinds = types_of(evts)
    assert kinds[0] == "leased" and kinds[-1] == "cancelled" and evts[-1]["reason"] == "test"
    assert evts[-1]["event_time"] - evts[0]["event_time"] < 30_000  # not the whole minute
