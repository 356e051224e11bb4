"""The worker's side of workflows written as code (decision 0217, "The worker"), in memory:
workflow tasks answered from a cache of live runs, code steps resolved from the loaded
modules only, and the definitions published when the code changes."""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.sdk.test_worker_sdk import request
from tests.unit.services.worker import code_workflow_fixture as app
from tickwheel.core.codeflow.definition import parse_code_definition
from tickwheel.errors import InvalidInput
from tickwheel.sdk.worker import ExecutionContext, HandlerRegistry, JobType, PermanentError
from tickwheel.services.worker.attempt import run_handler
from tickwheel.services.worker.code_workflows import (
    CodeWorkflowRegistry,
    CodeWorkflows,
    module_digest,
    publish_definitions,
    resume_parked,
)
from tickwheel.services.worker.runner import NO_HANDLER_REASON
from tickwheel.services.worker.service import build_registry
from tickwheel.services.worker.settings import WorkerSettings

from .test_worker_runner import Harness, eventually

APP = app.__name__
WORKFLOW = "workflow:unit_order"
HOUR_MS = 3_600_000


@pytest.fixture(autouse=True)
def _fresh_counters() -> Iterator[None]:
    app.STARTS.clear()
    app.CALLS.clear()
    yield


def context(job_type: str, payload: dict[str, Any]) -> ExecutionContext:
    return ExecutionContext.from_request(request(job_type=job_type), payload)


class Instance:
    """What the orchestrator keeps of one instance (decision 0217, "The instance"): its
    history, and the base the worker's cached run has consumed."""

    def __init__(
        self,
        workflow_id: str = "o-1",
        order: dict[str, Any] | None = None,
        code_version: str | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        # The code the instance started on: the fixture module's own, unless said otherwise.
        self.code_version = code_version or module_digest(app)
        self.history: list[dict[str, Any]] = [
            {
                "type": "workflow_started",
                "at_ms": 0,
                "name": "unit_order",
                "workflow_id": workflow_id,
                "run": 1,
                "seed": "s",
                "input": order or {"id": workflow_id, "amount": 30},
            }
        ]
        self.base = 0
        self.sent = 0  # history length the last task was computed on (before its commands)
        self.tasks = 0

    def task(self, base: int | None = None) -> dict[str, Any]:
        self.tasks += 1
        start = self.base if base is None else base
        self.sent = len(self.history)
        return {
            "workflow": "unit_order",
            "workflow_id": self.workflow_id,
            "run": 1,
            "code_version": self.code_version,
            "task": self.tasks,
            "base": start,
            "events": self.history[start:],
        }

    def record(self, answer: dict[str, Any]) -> None:
        """The answer's commands go into the history, and the next base is past them."""
        assert not answer.get("missed"), answer
        self.history.extend(answer["commands"])
        self.base = self.sent + len(answer["commands"])

    def step_completed(self, position: int, name: str, result: Any) -> None:
        event = {"type": "step_completed", "at_ms": 0, "position": position, "name": name}
        self.history.append({**event, "result": result, "attempts": 1})

    def timer_fired(self, position: int, at_ms: int) -> None:
        self.history.append({"type": "timer_fired", "at_ms": at_ms, "position": position})


def answer(code: CodeWorkflows, payload: dict[str, Any]) -> dict[str, Any]:
    registry = CodeWorkflowRegistry(HandlerRegistry(), code)
    result: dict[str, Any] = registry.get(WORKFLOW).handler(context(WORKFLOW, payload))
    return result


def step_types(result: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(c["type"], c.get("name")) for c in result["commands"]]


# -- workflow tasks ---------------------------------------------------------------------------


def test_the_first_task_replays_from_base_0_and_answers_the_commands_in_the_contracts_shape() -> (
    None
):
    code = CodeWorkflows.load([APP])
    first = Instance()
    result = answer(code, first.task())

    assert set(result) == {
        "task",
        "base",
        "commands",
        "status",
        "result",
        "error",
        "query",
        "waiting_on",
    }
    assert (result["task"], result["base"], result["status"]) == (1, 0, "running")
    assert step_types(result) == [("step_scheduled", "charge")]
    assert result["waiting_on"] == ["step 'charge'#1"]
    json.dumps(result, allow_nan=False)  # JSON data only: it is the execution's result
    assert code.consumed("o-1") == 2  # the started event and the command it answered
    assert code.stats.replays == 1


def test_a_task_at_the_consumed_base_feeds_only_its_new_events() -> None:
    code = CodeWorkflows.load([APP])
    instance = Instance()
    instance.record(answer(code, instance.task()))
    instance.step_completed(1, "charge", {"charged": 30})
    second = answer(code, instance.task())
    instance.record(second)
    assert step_types(second) == [("timer_started", "sleep")]
    assert second["base"] == 2 and second["query"] == {"charged": 30}
    instance.timer_fired(2, HOUR_MS)
    third = answer(code, instance.task())
    instance.record(third)
    assert step_types(third) == [("step_scheduled", "ship")]

    # One run, started once: the second and third tasks fed only their new events.
    assert app.STARTS == ["o-1"]
    assert (code.stats.replays, code.stats.hits, code.stats.misses) == (1, 2, 0)
    assert code.consumed("o-1") == len(instance.history)


def test_a_task_whose_base_the_worker_does_not_hold_is_missed_and_base_0_recovers() -> None:
    code = CodeWorkflows.load([APP])
    instance = Instance()
    instance.record(answer(code, instance.task()))
    instance.step_completed(1, "charge", {"charged": 30})

    missed = answer(code, instance.task(base=1))  # not what the cached run consumed (2)
    assert missed == {"task": 2, "missed": True}
    assert code.stats.misses == 1
    assert code.consumed("o-1") == 2  # a stale base leaves the live run as it was

    again = answer(code, instance.task(base=0))
    # The whole history replayed: the recorded step matched, the sleep is the new command.
    assert step_types(again) == [("timer_started", "sleep")]
    assert app.STARTS == ["o-1", "o-1"]  # the miss's follow-up replayed on a fresh run


def test_an_unknown_instance_with_a_nonzero_base_is_missed() -> None:
    code = CodeWorkflows.load([APP])
    assert answer(code, Instance("o-9").task(base=5)) == {"task": 1, "missed": True}
    assert app.STARTS == []


def test_the_run_evicted_by_the_lru_bound_is_missed_next_time() -> None:
    code = CodeWorkflows.load([APP], cache_size=2)
    instances = [Instance(f"o-{i}") for i in range(3)]
    for instance in instances:
        instance.record(answer(code, instance.task()))
    assert code.live_runs() == [("o-1", 1), ("o-2", 1)]  # o-0, least recent, made room
    assert code.stats.evictions == 1

    oldest = instances[0]
    oldest.step_completed(1, "charge", {"charged": 30})
    assert answer(code, oldest.task())["missed"] is True
    newest = instances[2]
    newest.step_completed(1, "charge", {"charged": 30})
    assert "missed" not in answer(code, newest.task())


def test_a_divergent_history_fails_the_task_permanently_naming_the_step_and_evicts_the_run() -> (
    None
):
    code = CodeWorkflows.load([APP])
    instance = Instance()
    instance.record(answer(code, instance.task()))
    # The history an older release recorded: its first step was `refund`, not `charge`.
    instance.history[1] = {**instance.history[1], "name": "refund"}
    instance.step_completed(1, "refund", {"refunded": 30})

    with pytest.raises(PermanentError) as failure:
        answer(code, instance.task(base=0))
    message = str(failure.value)
    assert "Divergence" in message and "'refund'#1" in message and "'charge'#1" in message
    assert "\n" not in message
    assert code.live_runs() == []


def test_a_divergence_fails_the_attempt_as_permanent_through_the_worker() -> None:
    code = CodeWorkflows.load([APP])
    instance = Instance()
    instance.history.append(
        {"type": "step_scheduled", "at_ms": 0, "position": 1, "name": "refund", "occurrence": 1}
    )
    registry = CodeWorkflowRegistry(HandlerRegistry(), code)
    ctx = context(WORKFLOW, instance.task())
    outcome = run_handler(registry.get(WORKFLOW), ctx, _Clock(), lambda: None)
    assert (outcome.event_type, outcome.error_kind) == ("failed", "permanent")
    assert "'refund'#1" in (outcome.error or "")


def test_code_other_than_the_instances_declines_a_task_it_diverges_on_as_retryable() -> None:
    """Decision 0218: during a rolling deploy a worker of the new code may take a task of an
    instance started on the old code. It runs it when the history replays; when it diverges,
    it declines (a retryable failure: the task is sent again, maybe to a worker of the old
    code) rather than park the instance."""
    code = CodeWorkflows.load([APP])
    instance = Instance(code_version="an-older-release")
    instance.history.append(
        {"type": "step_scheduled", "at_ms": 0, "position": 1, "name": "refund", "occurrence": 1}
    )
    registry = CodeWorkflowRegistry(HandlerRegistry(), code)
    ctx = context(WORKFLOW, instance.task())
    outcome = run_handler(registry.get(WORKFLOW), ctx, _Clock(), lambda: None)
    assert (outcome.event_type, outcome.error_kind) == ("failed", "retryable")
    assert "started on an-older-release" in (outcome.error or "")
    assert "'refund'#1" in (outcome.error or "")
    # A history the new code replays is simply answered, whatever code it started on.
    fresh = Instance("o-2", code_version="an-older-release")
    assert step_types(answer(code, fresh.task()))[0] == ("step_scheduled", "charge")


def test_an_ended_run_is_answered_then_evicted() -> None:
    code = CodeWorkflows.load([APP])
    instance = Instance()
    instance.record(answer(code, instance.task()))
    instance.step_completed(1, "charge", {"charged": 30})
    instance.record(answer(code, instance.task()))
    instance.timer_fired(2, HOUR_MS)
    instance.record(answer(code, instance.task()))
    instance.step_completed(3, "ship", "parcel-30")
    last = answer(code, instance.task())

    assert last["status"] == "completed" and last["result"] == {"parcel": "parcel-30"}
    assert step_types(last) == [("workflow_completed", None)]
    assert last["waiting_on"] == []
    assert code.live_runs() == []
    assert code.consumed("o-1") is None


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("workflow", "other", "workflow is 'other'"),
        ("workflow_id", "", "workflow_id is ''"),
        ("base", -1, "base is -1"),
        ("events", {"type": "x"}, "events is dict"),
        ("events", [{"type": "no_such_event"}], "unknown history event type"),
    ],
)
def test_a_payload_that_is_not_a_task_fails_permanently_naming_the_field(
    field: str, value: Any, named: str
) -> None:
    code = CodeWorkflows.load([APP])
    payload = {**Instance().task(), field: value}
    with pytest.raises(PermanentError, match=named):
        answer(code, payload)


# -- dispatch ---------------------------------------------------------------------------------


def test_the_registry_answers_workflow_and_code_types_and_nothing_it_does_not_hold() -> None:
    registered = HandlerRegistry([JobType("noop", lambda ctx: None)])
    registry = CodeWorkflowRegistry(registered, CodeWorkflows.load([APP]))

    assert registry.names() == ("noop", WORKFLOW)
    assert "noop" in registry and WORKFLOW in registry
    assert f"code:{APP}:charge" in registry
    for unknown in ("workflow:nope", "code:json:dumps", f"code:{APP}:missing", "other"):
        assert unknown not in registry


def test_an_unknown_code_type_takes_the_lanes_no_handler_path() -> None:
    registry = CodeWorkflowRegistry(HandlerRegistry(), CodeWorkflows.load([APP]))
    harness = Harness(registry)
    execution = harness.submit(job_type="workflow:nope")
    eventually(lambda: execution in harness.done)
    [*_, outcome] = harness.events_of(execution)
    assert (outcome["event_type"], outcome["reason"]) == ("failed", NO_HANDLER_REASON)


def test_a_workflow_task_runs_on_the_lanes_slots_and_its_answer_is_the_result() -> None:
    registry = CodeWorkflowRegistry(HandlerRegistry(), CodeWorkflows.load([APP]))
    harness = Harness(registry)
    execution = harness.submit(job_type=WORKFLOW, payload=json.dumps(Instance().task()))
    eventually(lambda: execution in harness.done)
    [*_, outcome] = harness.events_of(execution)
    assert outcome["event_type"] == "succeeded", outcome
    result = json.loads(outcome["details"])["result"]
    assert step_types(result) == [("step_scheduled", "charge")]


# -- code steps -------------------------------------------------------------------------------


def run_step(code: CodeWorkflows, ref: str, args: list[Any]) -> Any:
    job_type = CodeWorkflowRegistry(HandlerRegistry(), code).get(f"code:{ref}")
    return job_type.handler(context(job_type.name, {"args": args}))


def test_a_step_of_a_loaded_module_runs_with_its_recorded_arguments_sync_or_async() -> None:
    code = CodeWorkflows.load([APP])
    assert run_step(code, f"{APP}:charge", [{"id": "o-1", "amount": 30}]) == {"charged": 30}
    assert run_step(code, f"{APP}:ship", [{"charged": 30}]) == "parcel-30"  # awaited
    assert run_step(code, f"{APP}:plain", [21]) == 42  # a step need not be decorated
    assert run_step(code, f"{APP}:Tools.twice", [4]) == 8
    assert app.CALLS == ["charge", "ship", "plain"]


def test_a_module_of_the_loaded_modules_package_resolves_once_imported() -> None:
    code = CodeWorkflows.load([APP])
    ref = (
        f"{__name__}:{test_a_module_of_the_loaded_modules_package_resolves_once_imported.__name__}"
    )
    assert code.resolve(ref) is test_a_module_of_the_loaded_modules_package_resolves_once_imported


@pytest.mark.parametrize(
    "ref",
    [
        "json:dumps",  # imported in the process, not one of the worker's modules
        "os:system",
        f"{APP}:dumps",  # imported into the loaded module, defined elsewhere
        f"{APP}:STARTS",  # not a function
        f"{APP}:CardDeclined",  # a class
        f"{APP}:missing",
        "tests.unit.services.worker.never_imported:run",  # ours, but never imported: not now
        f"{APP}",  # no qualname
    ],
)
def test_a_ref_outside_the_loaded_modules_has_no_handler(ref: str) -> None:
    code = CodeWorkflows.load([APP])
    assert code.resolve(ref) is None
    assert code.job_type(f"code:{ref}") is None
    assert "tests.unit.services.worker.never_imported" not in sys.modules  # nor imported now


def test_a_declared_permanent_type_and_permanent_error_fail_permanently_others_retryably() -> None:
    code = CodeWorkflows.load([APP])
    job_type = CodeWorkflowRegistry(HandlerRegistry(), code).get(f"code:{APP}:charge")

    def outcome_of(order: dict[str, Any]) -> tuple[str | None, str | None]:
        ctx = context(job_type.name, {"args": [order]})
        outcome = run_handler(job_type, ctx, _Clock(), lambda: None)
        return outcome.error_kind, outcome.error

    declined = outcome_of({"id": "o-1", "amount": 1, "decline": True})
    assert declined[0] == "permanent" and "CardDeclined: card of order o-1" in (declined[1] or "")
    refused = outcome_of({"id": "o-2", "amount": 1, "refuse": True})
    assert refused == ("permanent", "PermanentError: order o-2 is refused")
    flaky = outcome_of({"id": "o-3", "amount": 1, "flaky": True})
    assert flaky == ("retryable", "ConnectionError: payment gateway unreachable")


def test_step_arguments_that_are_not_a_list_fail_permanently() -> None:
    code = CodeWorkflows.load([APP])
    job_type = code.job_type(f"code:{APP}:plain")
    assert job_type is not None
    with pytest.raises(PermanentError, match="args is dict; accepted: a list"):
        job_type.handler(context(job_type.name, {"args": {"value": 1}}))


# -- definitions ------------------------------------------------------------------------------


class Versions:
    """The definitions topic in memory, as `WorkflowsClient` reads and writes it."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = {(b["definitionId"], b["version"]): b for b in bodies}
        self.defined: list[dict[str, Any]] = []

    def definitions(self, definition_id: str | None = None) -> dict[tuple[str, int], Any]:
        return {k: v for k, v in self.bodies.items() if definition_id in (None, k[0])}

    def define(self, document: dict[str, Any], *, actor: str | None = None) -> dict[str, Any]:
        parse_code_definition(document)  # what the readers of the topic will parse
        self.bodies[(document["definitionId"], document["version"])] = document
        self.defined.append(document)
        return {"published": True}


def test_the_code_version_is_the_sha256_of_the_workflows_module_source() -> None:
    expected = hashlib.sha256(inspect.getsource(app).encode()).hexdigest()[:16]
    assert module_digest(app) == expected
    assert CodeWorkflows.load([APP]).code_versions() == {"unit_order": expected}


def test_the_first_start_publishes_version_1_and_a_restart_publishes_nothing() -> None:
    code = CodeWorkflows.load([APP])
    versions = Versions()
    published = publish_definitions(code, versions, actor="w1")
    assert [d.to_json() for d in published] == versions.defined
    assert versions.defined == [
        {
            "kind": "code",
            "definitionId": "unit_order",
            "version": 1,
            "codeVersion": module_digest(app),
        }
    ]
    assert publish_definitions(code, versions, actor="w1") == []
    assert len(versions.defined) == 1


def test_changed_code_publishes_the_latest_version_plus_one() -> None:
    old = {"kind": "code", "definitionId": "unit_order", "version": 1, "codeVersion": "0" * 16}
    older = {**old, "version": 2, "codeVersion": "1" * 16}
    versions = Versions(old, older)
    [published] = publish_definitions(CodeWorkflows.load([APP]), versions)
    assert (published.version, published.code_version) == (3, module_digest(app))


def test_a_name_published_as_a_dag_is_refused() -> None:
    dag = {"definitionId": "unit_order", "version": 1, "steps": []}
    with pytest.raises(InvalidInput, match="published as a DAG definition"):
        publish_definitions(CodeWorkflows.load([APP]), Versions(dag))


class _Clock:
    def now(self) -> float:
        return 0.0


def test_the_workers_registry_serves_its_modules_workflows_and_types_narrow_the_registered() -> (
    None
):
    settings = WorkerSettings(modules=(APP,), types=("noop", WORKFLOW), workflow_cache=7)
    registry = build_registry(settings)
    assert isinstance(registry, CodeWorkflowRegistry)
    assert registry.names() == ("noop", WORKFLOW)  # `sleep`, `http`, `fail` narrowed away
    assert registry.code.cache_size == 7
    assert f"code:{APP}:charge" in registry


def test_a_worker_without_modules_serves_no_code_types() -> None:
    registry = build_registry(WorkerSettings())
    assert not isinstance(registry, CodeWorkflowRegistry)
    assert f"code:{APP}:charge" not in registry


class _Instances:
    """The instances' summaries as `WorkflowsClient.list` gives them, and the retries sent."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.retried: list[tuple[str, str, str]] = []

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.rows if status is None or r["status"] == status]

    def retry_step(self, workflow_id: str, step: str, *, actor: str) -> None:
        self.retried.append((workflow_id, step, actor))


def test_new_code_sends_the_parked_instances_of_its_workflows_their_task_again() -> None:
    instances = _Instances(
        [
            {"workflowId": "a", "definitionId": "order", "status": "blocked"},
            {"workflowId": "b", "definitionId": "order", "status": "running"},
            {"workflowId": "c", "definitionId": "invoice", "status": "blocked"},
            {"workflowId": "d", "definitionId": "order", "status": "blocked"},
        ]
    )
    assert resume_parked(instances, ["order"], "w-1") == ["a", "d"]
    assert instances.retried == [("a", "@task", "w-1"), ("d", "@task", "w-1")]
