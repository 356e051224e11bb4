"""Workflows written as code on the real stack (decision 0217): a timer, an orchestrator and a
worker that loads the author's module (`--module`), all real processes on the real broker.
The worker publishes the workflow's definition; instances are started and signalled through
the SDK; what happened is judged from the recorded workflow events and execution requests."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    WorkflowStack,
    outcome_inputs,
    status_of,
    step_requests,
    workflow_alerts,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

APP = "tests.integration.code_workflow_app"


@pytest.fixture
def stack(kafka_bootstrap: str, applied_topology: str, tmp_path: Path) -> Iterator[WorkflowStack]:
    env = workflow_env(kafka_bootstrap, applied_topology)
    running = WorkflowStack(tmp_path, env, modules=("tests.integration.workflow_handlers", APP))
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", "workflows", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _code_definitions(bootstrap: str) -> list[dict[str, Any]]:
    found = []
    for record in read_to_end(topic_name("workflows.definitions"), None, bootstrap):
        if record.value is None:
            continue
        body = json.loads(decode(record.value, "WorkflowDefinition")[1]["body"])
        if body.get("kind") == "code":
            found.append(body)
    return found


def _history_types(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_type"] for e in events]


def _waiting_for_signal(bootstrap: str, workflow_id: str) -> bool:
    return "signal_wait_started" in _history_types(workflow_events(bootstrap).get(workflow_id, []))


def _ended(bootstrap: str, ids: list[str]) -> bool:
    events = workflow_events(bootstrap)
    return all(status_of(events.get(i, [])) in ("succeeded", "failed", "cancelled") for i in ids)


def test_code_workflows_run_to_their_end_with_each_step_run_once(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    def orders() -> list[dict[str, Any]]:
        # The module's workflows are published one after another: this one may come last.
        return [d for d in _code_definitions(kafka_bootstrap) if d["definitionId"] == "code_order"]

    assert wait_until(orders, 60), "no code definition of code_order"
    [definition] = orders()
    assert definition["version"] == 1 and definition["codeVersion"]
    client = WorkflowsClient(kafka_bootstrap)
    orders = [{"id": f"o{i}", "amount": 10 * i, "items": ["x"], "nap": "1s"} for i in range(3)]
    amounts = {client.start("code_order", order): order["amount"] for order in orders}
    approved = list(amounts)
    # Nobody approves this one: its wait times out, the workflow fails, its rollback runs.
    # Started from the command line, as a person would.
    late = '{"id": "late", "amount": 5, "items": ["x"], "nap": "1s", "patience": "2s"}'
    started = _cli(stack.env, "start", "code_order", "--input", late, "--json")
    assert started.returncode == 0, started.stderr
    refused = json.loads(started.stdout)["workflowId"]
    for workflow_id in approved:
        assert wait_until(lambda w=workflow_id: _waiting_for_signal(kafka_bootstrap, w), 90)

    # The deploy gate, before anyone is approved: the code they run passes; a version that
    # renamed a step they have run already is refused, naming each of them and the step.
    same = _cli(stack.env, "check", "--module", APP)
    assert same.returncode == 0, same.stdout + same.stderr
    assert all(f"{w} (code_order): passes" in same.stdout for w in approved), same.stdout
    renamed = _cli(stack.env, "check", "--module", f"{APP}_v2")
    assert renamed.returncode == 1, renamed.stdout + renamed.stderr
    for workflow_id in approved:
        [line] = [x for x in renamed.stdout.splitlines() if x.startswith(f"{workflow_id} ")]
        assert "diverges" in line and "pack" in line and "box" in line, line

    first, *others = approved
    approval = '{"approved": true, "by": "ann"}'
    sent = _cli(
        stack.env,
        "signal",
        first,
        "approval",
        "--payload",
        approval,
        "--signal-id",
        f"approve-{first}",
        "--json",
    )
    assert sent.returncode == 0 and json.loads(sent.stdout)["signalId"] == f"approve-{first}"
    for workflow_id in others:
        signal_id = f"approve-{workflow_id}"
        client.signal(workflow_id, "approval", {"approved": True, "by": "ann"}, signal_id=signal_id)
    for workflow_id in approved:
        # The same signal again (a retried call) is recorded once and delivered once.
        signal_id = f"approve-{workflow_id}"
        client.signal(workflow_id, "approval", {"approved": True, "by": "ann"}, signal_id=signal_id)
    everyone = [*approved, refused]
    assert wait_until(lambda: _ended(kafka_bootstrap, everyone), 120), {
        w: _history_types(workflow_events(kafka_bootstrap).get(w, [])) for w in everyone
    }

    events = workflow_events(kafka_bootstrap)
    for workflow_id in approved:
        history = events[workflow_id]
        assert status_of(history) == "succeeded", _history_types(history)
        seqs = [e["seq"] for e in history]
        assert seqs == list(range(1, len(seqs) + 1))
        steps = [e["step_id"] for e in history if e["event_type"] == "step_scheduled"]
        assert steps == [
            "authorize#1",
            "reserve_inventory#1",
            "pack#1",
            "notify#1",
            "capture_payment#1",
        ], _history_types(history)
        completed = Counter(e["step_id"] for e in history if e["event_type"] == "step_completed")
        assert completed == Counter(steps), completed
        assert _history_types(history).count("timer_fired") == 1  # the nap, once
        assert _history_types(history).count("signal_received") == 1
        assert _history_types(history).count("signal_duplicate") == 1
        [ending] = [e for e in history if e["event_type"] == "workflow_completed"]
        assert ending["data"]["result"] == {"captured": amounts[workflow_id]}

    # The timeline people read: the steps, the sleep and the wait (the CLI prints JSON with
    # its keys sorted; code_steps' own test holds the order they ran in).
    got = _cli(stack.env, "get", first, "--json")
    assert got.returncode == 0, got.stderr
    timeline = json.loads(got.stdout)
    assert timeline["status"] == "succeeded"
    labels = list(timeline["steps"])
    sleep = next(k for k in labels if k.startswith("sleep@"))
    wait = next(k for k in labels if k.startswith("signal:approval@"))
    assert {label: step["status"] for label, step in timeline["steps"].items()} == {
        "authorize#1": "succeeded",
        "reserve_inventory#1": "succeeded",
        "pack#1": "succeeded",
        sleep: "succeeded",
        wait: "succeeded",
        "notify#1": "succeeded",
        "capture_payment#1": "succeeded",
    }
    assert timeline["steps"][wait]["output"] == {"approved": True, "by": "ann"}

    late = events[refused]
    assert status_of(late) == "failed", _history_types(late)
    rollbacks = [
        e["step_id"]
        for e in late
        if e["event_type"] == "step_scheduled" and e["data"].get("compensation")
    ]
    assert rollbacks == ["release_authorization#1"], _history_types(late)

    # Every step and task execution was requested once per attempt, and each attempt has one
    # accepted outcome: the timer's exactly-once path, which code workflows travel unchanged.
    ours = set(everyone)
    requests = [r for r in step_requests(kafka_bootstrap) if r["workflow_id"] in ours]
    requested = Counter((r["execution_id"], r["attempt"]) for r in requests)
    assert requested and all(n == 1 for n in requested.values()), requested.most_common(3)
    outcomes = outcome_inputs(kafka_bootstrap)
    assert all(outcomes[key] == 1 for key in requested), [k for k in requested if outcomes[k] != 1]


def _swap_worker(stack: WorkflowStack, name: str, app: str) -> None:
    """Stop the worker that runs and start one that loads `app` instead, as a deploy would."""
    for running in [n for n in stack.processes if n.startswith("worker")]:
        stack.processes.pop(running).stop()
    modules = ("--module", "tests.integration.workflow_handlers", "--module", app)
    stack.add(name, "worker", "--concurrency", "8", "--shutdown-grace", "2", *modules).start()


def test_code_that_diverges_parks_the_instance_with_an_alert_and_a_fix_resumes_it(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    client = WorkflowsClient(kafka_bootstrap)
    assert wait_until(lambda: client.definitions("code_order"), 60), "no code definition"
    order = {"id": "p1", "amount": 7, "items": ["x"], "nap": "1s", "patience": "5m"}
    workflow_id = client.start("code_order", order, workflow_id="parked-1")
    assert wait_until(lambda: _waiting_for_signal(kafka_bootstrap, workflow_id), 90)

    # A deploy renames a step the instance has run: its next task diverges.
    _swap_worker(stack, "worker-v2", f"{APP}_v2")
    assert wait_until(lambda: len(client.definitions("code_order")) == 2, 60)
    client.signal(workflow_id, "approval", {"approved": True, "by": "ann"}, signal_id="s-1")

    def parked() -> bool:
        return status_of(workflow_events(kafka_bootstrap).get(workflow_id, [])) == "blocked"

    assert wait_until(parked, 90), _history_types(workflow_events(kafka_bootstrap)[workflow_id])
    [alert] = [a for a in workflow_alerts(kafka_bootstrap, workflow_id) if a["state"] == "firing"]
    assert "pack" in alert["message"] and "box" in alert["message"], alert["message"]

    # The fix (here: the first version back) publishes a version and resumes the instance,
    # which replays its history, takes the signal it was given, and ends.
    _swap_worker(stack, "worker-v1", APP)

    def done() -> bool:
        return status_of(workflow_events(kafka_bootstrap)[workflow_id]) == "succeeded"

    assert wait_until(done, 120), _history_types(workflow_events(kafka_bootstrap)[workflow_id])
    history = workflow_events(kafka_bootstrap)[workflow_id]
    assert _history_types(history).count("signal_received") == 1
    assert [a["state"] for a in workflow_alerts(kafka_bootstrap, workflow_id)][-1] == "resolved"


def test_a_parent_runs_each_child_as_an_instance_of_its_own_and_takes_its_end(
    kafka_bootstrap: str, stack: WorkflowStack
) -> None:
    """Child workflows on the stack (decision 0218): each child is started as an instance of
    its own, on its own partition, runs its steps once, and its end (a result, or a failure
    the parent catches) is delivered to the parent's wait."""

    def published() -> bool:
        names = {d["definitionId"] for d in _code_definitions(kafka_bootstrap)}
        return {"code_parent", "code_child"} <= names

    assert wait_until(published, 60), "no definition of code_parent"
    client = WorkflowsClient(kafka_bootstrap)
    orders = [{"id": "c1", "amount": 1, "items": ["x"]}, {"id": "c2", "amount": 2, "items": []}]
    parent_id = client.start("code_parent", orders)
    children = [f"{parent_id}:code_child:1", f"{parent_id}:code_child:2"]
    everyone = [parent_id, *children]
    assert wait_until(lambda: _ended(kafka_bootstrap, everyone), 120), {
        w: _history_types(workflow_events(kafka_bootstrap).get(w, [])) for w in everyone
    }
    events = workflow_events(kafka_bootstrap)
    assert status_of(events[children[0]]) == "succeeded"
    assert status_of(events[children[1]]) == "failed"
    parent_history = events[parent_id]
    assert status_of(parent_history) == "succeeded", _history_types(parent_history)
    types = _history_types(parent_history)
    assert (types.count("child_started"), types.count("child_completed")) == (2, 1), types
    assert types.count("child_failed") == 1, types
    [ending] = [e for e in parent_history if e["event_type"] == "workflow_completed"]
    parcel, failure = ending["data"]["result"]
    assert parcel == "parcel-reservation-c1"
    assert failure.startswith("failed: ") and "an order needs items" in failure, failure
    # The parent's timeline reads back from its own partition's end (not the whole topic).
    assert client.get(parent_id).status == "succeeded"

    requests = [r for r in step_requests(kafka_bootstrap) if r["workflow_id"] in set(everyone)]
    requested = Counter((r["execution_id"], r["attempt"]) for r in requests)
    assert requested and all(n == 1 for n in requested.values()), requested.most_common(3)
    outcomes = outcome_inputs(kafka_bootstrap)
    assert all(outcomes[key] == 1 for key in requested), [k for k in requested if outcomes[k] != 1]
