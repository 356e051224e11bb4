"""Golden cases of `workflow_step_stuck`: a step running or waiting past the
`expectedDuration` its definition version declares opens one incident, which resolves when the
step moves on; redelivered or reordered events decide the same."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    Observed,
    S,
    batched,
    details,
    kinds,
    run,
)

DEFINITION = {
    "definitionId": "publish", "version": 3,
    "steps": [
        {"id": "encode", "type": "encode", "expectedDuration": "10s"},
        {"id": "cool", "kind": "approval", "assignees": ["ed@example.com"], "timeout": "72h",
         "dependsOn": ["encode"], "expectedDuration": "20s"},
        {"id": "notify", "type": "notify", "dependsOn": ["cool"]},
    ],
}  # fmt: skip


def published(version: int = 3) -> Observed:
    body = {**DEFINITION, "version": version}
    return Observed("workflow_definition", f"publish/{version}", {
        "definition_id": "publish", "version": version, "body": json.dumps(body),
        "published_at": T0 - 100 * S, "published_by": None})  # fmt: skip


def wf_event(seq: int, kind: str, at: int, step: str | None, attempt: int = 1,
             data: dict[str, Any] | None = None, workflow: str = "wf-1") -> Observed:  # fmt: skip
    return Observed("workflow_event", workflow, {
        "event_id": f"{workflow}:{seq}", "event_time": at, "workflow_id": workflow,
        "definition_id": "publish", "definition_version": 3, "event_type": kind,
        "step_id": step, "attempt": attempt, "data": json.dumps(data) if data else None,
        "seq": seq, "actor": None, "tenant_id": "acme",
        "execution_id": f"x-{step}-{attempt}" if step else None, "error": None,
        "cause_input_id": None, "status": None})  # fmt: skip


def test_a_step_past_its_expected_duration_opens_once_and_resolves_when_it_ends() -> None:
    log = [published(), wf_event(0, "workflow_started", T0, None),
           wf_event(1, "step_scheduled", T0, "encode")]  # fmt: skip
    got = run([(T0 + 5 * S, log), (T0 + 10 * S, []), (T0 + 11 * S, []), (T0 + 14 * S, []),
               (T0 + 16 * S, [wf_event(2, "step_succeeded", T0 + 15 * S, "encode")])], QUICK)  # fmt: skip
    assert kinds(got) == [("workflow_step_stuck", "wf-1/encode", "opened"),
                          ("workflow_step_stuck", "wf-1/encode", "resolved")]  # fmt: skip
    assert got[0].at == T0 + 11 * S
    opened = details(got[0])
    assert opened["step_id"] == "encode" and opened["status"] == "running"
    assert opened["started_at"] == T0 and opened["expected_duration_ms"] == 10 * S
    assert opened["execution_id"] == "x-encode-1" and opened["definition_version"] == 3
    assert got[0].record()["tenant_id"] == "acme"
    assert details(got[1])["reason"] == "step_moved_on"


def test_steps_within_their_duration_or_without_one_raise_nothing() -> None:
    log = [published(), wf_event(1, "step_scheduled", T0, "encode"),
           wf_event(2, "step_succeeded", T0 + 9 * S, "encode"),
           wf_event(3, "approval_requested", T0 + 9 * S, "cool"),
           wf_event(4, "step_succeeded", T0 + 25 * S, "cool"),
           # notify declares no expectedDuration: running for ever is not this alert's business.
           wf_event(5, "step_scheduled", T0 + 25 * S, "notify")]  # fmt: skip
    # Evaluated every second for 200 s: the approval is answered at 16 s of its 20.
    assert run(batched(log, T0 - S, T0 + 200 * S, S), QUICK) == []


def test_a_waiting_approval_and_a_retried_task_count_from_their_first_start() -> None:
    retried = [published(), wf_event(1, "step_scheduled", T0, "encode"),
               wf_event(2, "step_failed", T0 + 4 * S, "encode", data={"final": False}),
               wf_event(3, "step_scheduled", T0 + 6 * S, "encode", attempt=2)]  # fmt: skip
    got = run([(T0 + 7 * S, retried), (T0 + 11 * S, [])], QUICK)
    assert kinds(got) == [("workflow_step_stuck", "wf-1/encode", "opened")]
    assert details(got[0])["attempt"] == 2 and details(got[0])["started_at"] == T0
    # A final failure ends it: the incident resolves.
    final = [*retried, wf_event(4, "step_failed", T0 + 12 * S, "encode", 2, {"final": True})]
    got = run([(T0 + 11 * S, retried), (T0 + 13 * S, final[-1:])], QUICK)
    assert [t.transition for t in got] == ["opened", "resolved"]
    sleeping = [published(), wf_event(1, "approval_requested", T0, "cool")]
    got = run([(T0 + S, sleeping), (T0 + 21 * S, [])], QUICK)
    assert kinds(got) == [("workflow_step_stuck", "wf-1/cool", "opened")]
    assert details(got[0])["status"] == "waiting"


def test_reordered_or_redelivered_workflow_events_give_identical_transitions() -> None:
    log = [published(), wf_event(1, "step_scheduled", T0, "encode"),
           wf_event(2, "step_failed", T0 + 2 * S, "encode", data={"final": False}),
           wf_event(3, "step_scheduled", T0 + 3 * S, "encode", attempt=2),
           wf_event(4, "step_succeeded", T0 + 14 * S, "encode", attempt=2),
           wf_event(5, "approval_requested", T0 + 14 * S, "cool"),
           wf_event(1, "step_scheduled", T0, "encode", workflow="wf-2")]  # fmt: skip
    reference = [(T0 + 12 * S, log[:4] + log[6:]), (T0 + 40 * S, log[4:6]), (T0 + 60 * S, [])]
    expected = [t.record() for t in run(reference, QUICK)]
    assert sorted(kinds(run(reference, QUICK))) == [
        ("workflow_step_stuck", "wf-1/cool", "opened"),
        ("workflow_step_stuck", "wf-1/encode", "opened"),
        ("workflow_step_stuck", "wf-1/encode", "resolved"),
        ("workflow_step_stuck", "wf-2/encode", "opened"),
    ]
    for seed in range(20):
        rng = random.Random(seed)
        shuffled = []
        for watermark, batch in reference:
            copy = batch + [rng.choice(batch) for _ in range(len(batch))] if batch else []
            rng.shuffle(copy)
            shuffled.append((watermark, copy))
        assert [t.record() for t in run(shuffled, QUICK)] == expected, seed


# -- workflows written as code (decision 0217) ----------------------------------------------


def code_published() -> Observed:
    body = {"kind": "code", "definitionId": "orders", "version": 1, "codeVersion": "abc"}
    return Observed(
        "workflow_definition",
        "orders/1",
        {
            "definition_id": "orders",
            "version": 1,
            "body": json.dumps(body),
            "published_at": T0 - 100 * S,
            "published_by": None,
        },
    )


def code_event(seq: int, kind: str, at: int, step: str | None, **data: Any) -> Observed:
    recorded = wf_event(seq, kind, at, step, data={"type": kind, "at_ms": at, **data})
    assert recorded.record is not None
    record = {**recorded.record, "definition_id": "orders", "definition_version": 1}
    return Observed(recorded.kind, recorded.key, record)


def scheduled(seq: int, at: int, label: str, expected_ms: int | None) -> Observed:
    options = {"ref": "orders:charge", "max_attempts": 3}
    if expected_ms is not None:
        options["expected_ms"] = expected_ms
    return code_event(seq, "step_scheduled", at, label, position=seq, options=options)


def test_a_code_step_past_its_own_expected_duration_opens_and_resolves_when_it_completes() -> None:
    log = [
        code_published(),
        code_event(0, "workflow_started", T0, None),
        scheduled(1, T0, "charge#1", 10 * S),
    ]
    done = code_event(2, "step_completed", T0 + 15 * S, "charge#1", position=1, result=1)
    got = run([(T0 + 5 * S, log), (T0 + 11 * S, []), (T0 + 16 * S, [done])], QUICK)
    assert kinds(got) == [
        ("workflow_step_stuck", "wf-1/charge#1", "opened"),
        ("workflow_step_stuck", "wf-1/charge#1", "resolved"),
    ]
    assert details(got[0])["expected_duration_ms"] == 10 * S


def test_code_steps_without_an_expectation_or_ended_with_their_run_raise_nothing() -> None:
    log = [
        code_published(),
        code_event(0, "workflow_started", T0, None),
        # No `expected`: running for ever is not this alert's business.
        scheduled(1, T0, "charge#1", None),
        scheduled(2, T0, "ship#1", 10 * S),
        # The run is cancelled at 5 s: what it left running records nothing more.
        code_event(3, "workflow_cancelled", T0 + 5 * S, None),
    ]
    assert run(batched(log, T0 - S, T0 + 100 * S, S), QUICK) == []
