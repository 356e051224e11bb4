"""The workflow history tests' run: real workflow instances on the real broker (timer,
orchestrator and worker processes), recorded by the history sink into chDB.

`recorded` (a module fixture: each test module importing it gets its own run) runs a saga
(parallel branches, a step retried once, a sleep, an approval decided by a named actor with
a note, a final task that fails for good, its compensations), the same saga rejected by
another actor (and a late decision fenced), an instance that failed and was repaired by an
operator's retry-step, and one left waiting on an approval past its expectedDuration; then a
bad record on `workflows.events`; then the sink records everything. No tests here: they are
in test_workflow_history.py and test_workflow_history_crash.py.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_sink_running import sink_in_thread
from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import (
    APPROVAL_KEYS,
    WorkflowStack,
    status_of,
    types_of,
    workflow_env,
    workflow_events,
)
from tickwheel.adapters.clickhouse import HistorySettings
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.history import (
    ClosableHistoryReader,
    open_history_reader,
    workflow_approvals,
    workflow_compensations,
    workflow_step_stats,
)
from tickwheel.ports.history import HistoryStore
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.services.history.settings import HistorySinkSettings
from tickwheel.topology import topic_name

TIMEOUT_S = 120.0
ENDED = ("succeeded", "failed", "cancelled", "compensated")
GARBAGE = b"not a workflow event"


def _task(step_id: str, *deps: str, job_type: str = "wf_echo", **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "type": job_type, "dependsOn": list(deps),
            "payload": {"step": step_id}, **extra}  # fmt: skip


def _compensated(step_id: str, *deps: str) -> dict[str, Any]:
    return _task(step_id, *deps, compensation={"type": "wf_echo", "payload": {"undo": step_id}})


SAGA = {
    "definitionId": "wfh-saga", "version": 1, "onFailure": "compensate",
    "steps": [
        _compensated("fetch"), _compensated("left", "fetch"), _compensated("right", "fetch"),
        # Fails its first attempt (retryable), succeeds on the second.
        _task("flaky", "fetch", job_type="wf_fail", payload={"times": 1}, maxAttempts=2,
              backoff={"base": "200ms"}),
        {"id": "nap", "kind": "sleep", "duration": "1s", "dependsOn": ["left", "right", "flaky"]},
        {"id": "sign_off", "kind": "approval", "dependsOn": ["nap"], "timeout": "5m",
         "assignees": ["lead@example.com"]},
        _task("publish", "sign_off", job_type="wf_fail", payload={"mode": "permanent"},
              onFailure="compensate"),
    ],
}  # fmt: skip
REPAIR = {
    "definitionId": "wfh-repair", "version": 1,
    "steps": [_task("flaky", job_type="wf_fail", payload={"mode": "permanent", "times": 1},
                    onFailure="fail")],
}  # fmt: skip
WAITING = {
    "definitionId": "wfh-waiting", "version": 1,
    "steps": [{"id": "hold", "kind": "approval", "timeout": "10m", "expectedDuration": "1s",
               "assignees": ["ops@example.com"]}],
}  # fmt: skip


@dataclass
class Recorded:
    bootstrap: str
    saga: str  # approved, then its last task fails for good: compensated
    rejected: str  # the same definition, its approval rejected: compensated
    repaired: str  # failed, then an operator retried its step, which succeeded
    waiting: str  # the instance left waiting past its expectedDuration
    events: dict[str, list[dict[str, Any]]]  # what workflows.events holds, by instance
    reader: ClosableHistoryReader  # what the CLI gets: the owner's endpoint
    store: HistoryStore  # the sink's own store, for the redelivery tests
    sink_settings: HistorySinkSettings


def recorded_ids(reader: Any) -> Counter[str]:
    rows = reader.query("SELECT event_id FROM workflow_events FINAL").rows
    return Counter(str(row[0]) for row in rows)


def topic_ids(events: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {e["event_id"] for instance in events.values() for e in instance}


@pytest.fixture(scope="module")
def recorded(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    from tickwheel.adapters.kafka.admin import apply_topology

    tmp: Path = tmp_path_factory.mktemp("wfh")
    prefix = f"t{uuid.uuid4().hex[:10]}."
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CLICKHOUSE_URL", raising=False)  # embedded chDB, read through its owner
        env.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
        env.setenv("TICKWHEEL_TOPIC_PREFIX", prefix)
        apply_topology(bootstrap=kafka_bootstrap)
        stack = WorkflowStack(tmp, workflow_env(kafka_bootstrap, prefix)).start()
        try:
            saga, rejected, repaired, waiting = _run_workflows(kafka_bootstrap)
        finally:
            stack.stop()
        events = workflow_events(kafka_bootstrap)
        # A bad record among the events: dead-lettered, and the sink goes on past it.
        producer = EventProducer(kafka_bootstrap)
        producer.send(topic_name("workflows.events"), "not-an-instance", GARBAGE)
        producer.flush()
        settings = HistorySinkSettings(
            instance="wfh", bootstrap=kafka_bootstrap, group_id=f"wfh-{uuid.uuid4().hex[:8]}",
            max_batch=25, max_wait_ms=100, history=HistorySettings(history_dir=tmp / "history"),
        )  # fmt: skip
        with sink_in_thread(settings) as service:
            reader = open_history_reader(settings.history)
            try:
                # workflows.events is transactional: its end offset counts commit markers, so
                # "caught up" is every committed event in the table, not offsets.
                wanted = topic_ids(events)
                assert wait_until(lambda: set(recorded_ids(reader)) >= wanted, TIMEOUT_S)
                assert service.sink is not None
                yield Recorded(kafka_bootstrap, saga, rejected, repaired, waiting, events, reader,
                               service.sink.store, settings)  # fmt: skip
            finally:
                reader.close()


def _run_workflows(bootstrap: str) -> tuple[str, str, str, str]:
    flows = WorkflowsClient(bootstrap, keys=APPROVAL_KEYS)
    flows.define(SAGA)
    flows.define(WAITING)
    flows.define(REPAIR)
    repaired = flows.start("wfh-repair")
    saga = flows.start("wfh-saga")
    waiting = flows.start("wfh-waiting")

    def types(workflow_id: str) -> list[str]:
        return types_of(workflow_events(bootstrap).get(workflow_id, []))

    assert wait_until(lambda: "approval_requested" in types(saga), TIMEOUT_S)
    flows.approve(flows.approval_token(saga, "sign_off"), actor="lead@example.com",
                  note="ship it")  # fmt: skip
    # The same definition again, rejected by another actor; a decision sent after it on the
    # same round is fenced (recorded, never applied).
    rejected = flows.start("wfh-saga")
    assert wait_until(lambda: "approval_requested" in types(rejected), TIMEOUT_S)
    token = flows.approval_token(rejected, "sign_off")
    flows.reject(token, actor="auditor@example.com", note="not today")
    flows.approve(token, actor="late@example.com", note="too late")

    def ended(instance: str) -> bool:
        return status_of(workflow_events(bootstrap).get(instance, [])) in ENDED

    assert wait_until(lambda: ended(saga) and ended(rejected) and ended(repaired), TIMEOUT_S)
    flows.retry_step(repaired, "flaky", actor="ops@example.com")
    assert wait_until(lambda: "step_retried" in types(repaired) and ended(repaired), TIMEOUT_S)
    assert wait_until(lambda: "approval_fenced" in types(rejected), TIMEOUT_S)
    assert wait_until(lambda: "step_overdue" in types(waiting), TIMEOUT_S)
    return saga, rejected, repaired, waiting


def saga_answers(reader: Any) -> dict[str, Any]:
    return {
        "steps": workflow_step_stats(reader).rows,
        "approvals": workflow_approvals(reader).rows,
        "compensations": workflow_compensations(reader).rows,
        "ids": recorded_ids(reader),
    }
