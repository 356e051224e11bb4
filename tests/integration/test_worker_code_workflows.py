"""A real worker process started with `--module` on the real broker (decision 0217, "The
worker"): it publishes its code workflow's definition once per code version, answers
workflow tasks from its cache of live runs, and runs code steps of its own modules only.
Requests are published straight to `executions.normal`, standing in for the timer."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.test_worker import events, finished, make_request, publish, wait_for
from tests.unit.services.worker import code_workflow_fixture as app
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.services.worker.code_workflows import module_digest
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

APP = app.__name__
WORKER_ARGS = ("--module", APP, "--shutdown-grace", "1")
STARTED = {
    "type": "workflow_started",
    "at_ms": 0,
    "name": "unit_order",
    "workflow_id": "o-1",
    "run": 1,
    "seed": "s",
    "input": {"id": "o-1", "amount": 30},
}


def code_definitions(bootstrap: str) -> list[dict[str, Any]]:
    found = []
    for record in read_to_end(topic_name("workflows.definitions"), None, bootstrap, timeout=20):
        if record.value is not None:
            found.append(json.loads(decode(record.value, "WorkflowDefinition")[1]["body"]))
    return [d for d in found if d.get("definitionId") == "unit_order"]


def task(number: int, base: int, history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "workflow": "unit_order",
        "workflow_id": "o-1",
        "run": 1,
        "code_version": module_digest(app),
        "task": number,
        "base": base,
        "events": history[base:],
    }


def outcome(bootstrap: str, execution_id: str) -> dict[str, Any]:
    grouped = wait_for(finished(bootstrap, [execution_id]), 60, f"the outcome of {execution_id}")
    [last] = [e for e in grouped[execution_id] if e["event_type"] in ("succeeded", "failed")]
    return dict(last)


def test_the_worker_publishes_its_code_version_once_and_answers_tasks_from_its_live_run(
    kafka_bootstrap: str, worker: Callable[[], subprocess.Popen[bytes]]
) -> None:
    first = worker(*WORKER_ARGS)
    wanted = {"kind": "code", "definitionId": "unit_order", "version": 1}
    published = wait_for(lambda: code_definitions(kafka_bootstrap), 60, "the definition")
    assert published == [{**wanted, "codeVersion": module_digest(app)}]

    history = [STARTED]
    one = make_request("workflow:unit_order", task(1, 0, history))
    publish(kafka_bootstrap, [one])
    answer = json.loads(outcome(kafka_bootstrap, one["execution_id"])["details"])["result"]
    assert [(c["type"], c["name"]) for c in answer["commands"]] == [("step_scheduled", "charge")]

    # The next task carries only what happened since: the worker's live run takes it.
    history += answer["commands"]
    history.append(
        {
            "type": "step_completed",
            "at_ms": 5,
            "position": 1,
            "name": "charge",
            "result": {"charged": 30},
            "attempts": 1,
        }
    )
    two = make_request("workflow:unit_order", task(2, 2, history))
    # A base the worker never answered at: it holds no run there.
    stale = make_request("workflow:unit_order", task(2, 1, history))
    publish(kafka_bootstrap, [two])
    second = json.loads(outcome(kafka_bootstrap, two["execution_id"])["details"])["result"]
    assert [(c["type"], c["name"]) for c in second["commands"]] == [("timer_started", "sleep")]
    publish(kafka_bootstrap, [stale])
    missed = json.loads(outcome(kafka_bootstrap, stale["execution_id"])["details"])["result"]
    assert missed == {"task": 2, "missed": True}

    # A restart with the same code publishes nothing new.
    first.send_signal(signal.SIGTERM)
    assert first.wait(20) == 0
    worker(*WORKER_ARGS)
    step = make_request(f"code:{APP}:charge", {"args": [{"id": "o-1", "amount": 30}]})
    publish(kafka_bootstrap, [step])
    done = outcome(kafka_bootstrap, step["execution_id"])  # the restarted worker is serving
    assert json.loads(done["details"])["result"] == {"charged": 30}
    assert code_definitions(kafka_bootstrap) == published


def test_a_code_step_outside_the_workers_modules_has_no_handler_and_a_declared_failure_is_permanent(
    kafka_bootstrap: str, worker: Callable[[], subprocess.Popen[bytes]]
) -> None:
    worker(*WORKER_ARGS)
    foreign = make_request("code:os:system", {"args": ["true"]}, max_attempts=1)
    declined = make_request(
        f"code:{APP}:charge", {"args": [{"id": "o-2", "amount": 1, "decline": True}]}
    )
    publish(kafka_bootstrap, [foreign, declined])
    refused = outcome(kafka_bootstrap, foreign["execution_id"])
    assert (refused["event_type"], refused["reason"]) == ("failed", "no_handler")
    failed = outcome(kafka_bootstrap, declined["execution_id"])
    assert (failed["event_type"], failed["error_kind"]) == ("failed", "permanent")
    assert "CardDeclined" in failed["error"]
    assert len(events(kafka_bootstrap)) == 2
