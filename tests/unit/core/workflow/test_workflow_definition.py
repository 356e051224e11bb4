"""Workflow definitions: what is accepted, what is refused and with which field named, and
the compatibility check between two versions."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.core.workflow import check_compatible, parse_definition
from tickwheel.errors import InvalidInput


def body(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"definitionId": "video_publish", "version": 1, "steps": list(steps), **top}


PUBLISH = body(
    {"id": "probe", "type": "probe_source", "payload": {"url": "s3://x"}},
    {"id": "encode", "type": "encode", "dependsOn": ["probe"],
     "payloadTemplate": {"src": "{{ steps.probe.output.path }}", "id": "{{ input.id }}"},
     "maxAttempts": 5, "backoff": {"base": "2s", "cap": "1m"}, "timeout": "30m",
     "expectedDuration": "10m", "onFailure": "compensate",
     "compensation": {"type": "delete_encoding",
                      "payloadTemplate": {"key": "{{ steps.encode.output.key }}"}}},
    {"id": "wait", "kind": "sleep", "duration": "1h", "dependsOn": ["encode"]},
    {"id": "approve", "kind": "approval", "dependsOn": ["wait"], "timeout": "72h",
     "onTimeout": "escalate", "assignees": ["ed"], "escalateTo": ["boss"]},
)  # fmt: skip


def test_a_full_definition_parses_with_its_defaults() -> None:
    definition = parse_definition(PUBLISH)
    assert [s.id for s in definition.steps] == ["probe", "encode", "wait", "approve"]
    assert definition.on_failure == "compensate" and definition.on_cancel == "compensate"
    encode = definition.step("encode")
    assert encode is not None and encode.task is not None and encode.compensation is not None
    assert encode.task.retry.max_attempts == 5 and encode.task.retry.base_ms == 2_000
    assert encode.timeout_ms == 1_800_000 and encode.expected_duration_ms == 600_000
    probe = definition.step("probe")
    assert probe is not None and probe.task is not None and probe.task.retry.max_attempts == 3
    assert probe.on_failure == "retry"
    wait = definition.step("wait")
    assert wait is not None and wait.duration_ms == 3_600_000
    approve = definition.step("approve")
    assert approve is not None and approve.on_timeout == "escalate"
    assert approve.max_escalations == 1 and approve.assignees == ("ed",)


def test_steps_come_in_topological_order_whatever_the_document_order() -> None:
    definition = parse_definition(body(
        {"id": "c", "type": "t", "dependsOn": ["b", "a"]},
        {"id": "b", "type": "t", "dependsOn": ["a"]},
        {"id": "a", "type": "t"},
    ))  # fmt: skip
    assert [s.id for s in definition.steps] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("bad", "field", "says"),
    [
        (body({"id": "a", "type": "t"}, {"id": "a", "type": "t"}), "steps[1].id", "unique"),
        (body({"id": "a", "type": "t", "dependsOn": ["zz"]}), "steps[0].dependsOn", "'zz'"),
        (body({"id": "a", "type": "t", "dependsOn": ["b"]},
              {"id": "b", "type": "t", "dependsOn": ["a"]}), "steps", "cycle a -> b -> a"),
        (body({"id": "a", "type": "t", "dependsOn": ["a"]}), "steps", "cycle a -> a"),
        (body({"id": "a", "kind": "job", "type": "t"}), "steps[0].kind", "task, sleep, approval"),
        (body({"id": "a"}), "steps[0].type", "required"),
        (body({"id": "a", "kind": "sleep"}), "steps[0].duration", "required"),
        (body({"id": "a", "kind": "sleep", "duration": "soon"}), "steps[0].duration", "units"),
        (body({"id": "a", "kind": "sleep", "duration": "1s", "type": "x"}), "steps[0].type",
         "not a field of a sleep step"),
        (body({"id": "a", "type": "t", "onFailure": "ignore"}), "steps[0].onFailure",
         "retry, skip, fail, compensate"),
        (body({"id": "a", "type": "t", "maxAttempts": 0}), "steps[0].maxAttempts", "1 to 100"),
        (body({"id": "a b", "type": "t"}), "steps[0].id", "stable name"),
        (body({"id": "a", "type": "t", "payload": {}, "payloadTemplate": {}}),
         "steps[0].payloadTemplate", "one of the two"),
        (body({"id": "a", "type": "t", "payloadTemplate": {"x": "{{ nope }}"}}),
         "steps[0].payloadTemplate", "unknown root"),
        (body({"id": "a", "type": "t"}, {"id": "b", "type": "t",
                                          "payloadTemplate": {"x": "{{ steps.a.output }}"}}),
         "steps[1].payloadTemplate", "not a step this one depends on"),
        (body({"id": "a", "type": "t", "compensation": {"payload": {}}}),
         "steps[0].compensation.type", "required"),
        (body({"id": "a", "type": "t"}, onFailure="skip"), "onFailure", "compensate, fail"),
        (body({"id": "a", "type": "t"}, onCancel="ignore"), "onCancel", "compensate, abandon"),
        ({"definitionId": "x", "steps": [{"id": "a", "type": "t"}]}, "version", "required"),
        (body(), "steps", "1 to 500"),
        (body({"id": "a", "type": "t"}, extra=1), "extra", "unknown field"),
    ],
)  # fmt: skip
def test_a_bad_definition_names_the_field_and_what_is_accepted(
    bad: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_definition(bad)
    assert caught.value.field == field
    assert says in caught.value.message


def test_a_compensation_template_may_read_its_own_steps_output() -> None:
    parse_definition(body({"id": "a", "type": "t", "compensation": {
        "type": "undo", "payloadTemplate": {"k": "{{ steps.a.output.k }}"}}}))  # fmt: skip


OLD = parse_definition(body(
    {"id": "a", "type": "charge"},
    {"id": "b", "type": "ship", "dependsOn": ["a"]},
    {"id": "c", "kind": "sleep", "duration": "1d", "dependsOn": ["b"]},
))  # fmt: skip


def test_appending_a_step_is_compatible() -> None:
    new = body({"id": "a", "type": "charge"}, {"id": "b", "type": "ship", "dependsOn": ["a"]},
               {"id": "c", "kind": "sleep", "duration": "2d", "dependsOn": ["b"]},
               {"id": "d", "type": "mail", "dependsOn": ["c"]}, version=2)  # fmt: skip
    assert check_compatible(OLD, new, live_steps=["c"]) == []


def test_a_reused_id_for_another_kind_or_job_type_is_refused() -> None:
    new = body({"id": "a", "type": "refund"}, {"id": "b", "kind": "sleep", "duration": "1s"},
               version=2)  # fmt: skip
    reasons = check_compatible(OLD, new)
    assert any("'a' ran job type 'charge' and would run 'refund'" in r for r in reasons)
    assert any("'b' was a task step and would be a sleep step" in r for r in reasons)


def test_a_removed_dependency_that_is_still_named_is_refused() -> None:
    new = body({"id": "b", "type": "ship", "dependsOn": ["a"]}, version=2)
    assert check_compatible(OLD, new) == [
        "steps[0].dependsOn: 'a' is not a step of this definition; accepted: ['b']"
    ]


def test_a_cycle_is_refused() -> None:
    new = body({"id": "a", "type": "charge", "dependsOn": ["b"]},
               {"id": "b", "type": "ship", "dependsOn": ["a"]}, version=2)  # fmt: skip
    reasons = check_compatible(OLD, new)
    assert len(reasons) == 1 and "cycle" in reasons[0]


def test_removing_a_step_is_refused_only_while_instances_are_in_it() -> None:
    new = body({"id": "a", "type": "charge"}, {"id": "b", "type": "ship", "dependsOn": ["a"]},
               version=2)  # fmt: skip
    assert check_compatible(OLD, new, live_steps=["a"]) == []
    reasons = check_compatible(OLD, new, live_steps=["c", "a"])
    assert reasons == ["step 'c' is removed, but running instances are in it; wait for them "
                       "to finish or keep the step"]  # fmt: skip


def test_the_version_must_move_forward_and_the_id_stay() -> None:
    same = parse_definition(body({"id": "a", "type": "charge"}))
    assert any("does not follow" in r for r in check_compatible(OLD, same))
    other = parse_definition(body({"id": "a", "type": "charge"}, definitionId="x", version=3))
    assert any("definitionId 'x'" in r for r in check_compatible(OLD, other))
