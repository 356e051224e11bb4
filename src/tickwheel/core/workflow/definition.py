"""Workflow definitions as data: the JSON body of `POST /workflow-definitions`, checked.

`parse_definition` turns the JSON document (camelCase, like job definitions) into a
`WorkflowDefinition`, or raises `InvalidInput` whose `field` names the offending field
(`steps[2].dependsOn`) and whose message says what is accepted. Cycles, unknown
dependencies, duplicate ids and templates that read a step which is not an ancestor are
refused here, so the fold never meets them. The format is documented in docs/workflows.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickwheel.core.retry import RetryPolicy
from tickwheel.core.workflow.template import step_references
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput

__all__ = [
    "KINDS",
    "ON_CANCEL",
    "ON_FAILURE",
    "ON_TIMEOUT",
    "STEP_ON_FAILURE",
    "StepSpec",
    "TaskSpec",
    "WorkflowDefinition",
    "parse_definition",
]

KINDS = ("task", "sleep", "approval")
STEP_ON_FAILURE = ("retry", "skip", "fail", "compensate")
ON_FAILURE = ("compensate", "fail")
ON_CANCEL = ("compensate", "abandon")
ON_TIMEOUT = ("fail", "escalate")
MAX_STEPS = 500
_ID = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_TOP_FIELDS = frozenset(
    {"definitionId", "version", "steps", "onFailure", "onCancel", "tenantId", "description"}
)
_STEP_FIELDS = {
    "task": frozenset(
        {
            "id",
            "kind",
            "dependsOn",
            "type",
            "payload",
            "payloadTemplate",
            "maxAttempts",
            "backoff",
            "timeout",
            "expectedDuration",
            "onFailure",
            "compensation",
        }
    ),
    "sleep": frozenset({"id", "kind", "dependsOn", "duration", "onFailure", "compensation"}),
    "approval": frozenset(
        {
            "id",
            "kind",
            "dependsOn",
            "timeout",
            "onTimeout",
            "assignees",
            "escalateTo",
            "maxEscalations",
            "expectedDuration",
            "onFailure",
            "compensation",
        }
    ),
}
_TASK_FIELDS = frozenset(
    {"type", "payload", "payloadTemplate", "maxAttempts", "backoff", "timeout"}
)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """What a task (a step's, or a compensation) runs: a job type and its payload.

    Exactly one of `payload` (sent as is) and `template` (rendered at schedule time) is set.
    `retry` gives the attempts and the backoff between them; `timeout_ms` bounds one attempt.
    """

    job_type: str
    payload: Mapping[str, Any] | None
    template: Mapping[str, Any] | None
    retry: RetryPolicy
    timeout_ms: int | None


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One step: `id` is its stable name, never a position (DESIGN §3)."""

    id: str
    kind: str
    depends_on: tuple[str, ...]
    on_failure: str
    task: TaskSpec | None = None
    compensation: TaskSpec | None = None
    duration_ms: int | None = None
    timeout_ms: int | None = None
    on_timeout: str = "fail"
    assignees: tuple[str, ...] = ()
    escalate_to: tuple[str, ...] = ()
    max_escalations: int = 1
    expected_duration_ms: int | None = None

    @property
    def job_type(self) -> str | None:
        return None if self.task is None else self.task.job_type


@dataclass(frozen=True, slots=True)
class WorkflowDefinition:
    """A checked definition; `steps` is in a topological order (ties in document order),
    the order in which the fold starts steps that become ready together."""

    definition_id: str
    version: int
    steps: tuple[StepSpec, ...]
    on_failure: str = "compensate"
    on_cancel: str = "compensate"

    def step(self, step_id: str) -> StepSpec | None:
        for spec in self.steps:
            if spec.id == step_id:
                return spec
        return None

    @property
    def step_ids(self) -> frozenset[str]:
        return frozenset(spec.id for spec in self.steps)


def _one_of(
    spec: Mapping[str, Any], field: str, name: str, default: str, accepted: tuple[str, ...]
) -> str:
    value = spec.get(name, default)
    if value not in accepted:
        raise InvalidInput(field, f"{value!r}; accepted: {', '.join(accepted)}")
    return str(value)


def _int(spec: Mapping[str, Any], field: str, name: str, default: int, low: int, high: int) -> int:
    value = spec.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(field, f"{value!r}; accepted: an integer from {low} to {high}")
    return value


def _duration(spec: Mapping[str, Any], field: str, name: str) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    accepted = "accepted: a duration with units ms, s, m, h, d, such as '30s', '72h' or '1h30m'"
    if not isinstance(value, str):
        raise InvalidInput(field, f"{value!r}; {accepted}")
    try:
        ms = parse_duration_ms(value, field)
    except InvalidInput:
        raise InvalidInput(field, f"{value[:40]!r} is not a duration; {accepted}") from None
    if ms <= 0:
        raise InvalidInput(field, f"{value!r} is zero; {accepted} (above zero)")
    return ms


def _names(spec: Mapping[str, Any], field: str, name: str) -> tuple[str, ...]:
    value = spec.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInput(field, "accepted: a list of non-empty strings")
    return tuple(value)


def _task(spec: Mapping[str, Any], field: str) -> TaskSpec:
    job_type = spec.get("type")
    if not isinstance(job_type, str) or not job_type.strip() or len(job_type) > 100:
        raise InvalidInput(
            f"{field}.type", "required; accepted: the job type a worker handles, e.g. 'http'"
        )
    if "payload" in spec and "payloadTemplate" in spec:
        raise InvalidInput(
            f"{field}.payloadTemplate", "given with payload; accepted: one of the two"
        )
    payload = spec.get("payload", {})
    if not isinstance(payload, dict):
        raise InvalidInput(f"{field}.payload", "accepted: a JSON object")
    template = spec.get("payloadTemplate")
    if template is not None:
        step_references(template, f"{field}.payloadTemplate")
    backoff = spec.get("backoff", {})
    if not isinstance(backoff, dict) or set(backoff) - {"base", "cap"}:
        raise InvalidInput(
            f"{field}.backoff", "accepted: an object with 'base' and/or 'cap' durations"
        )
    base = _duration(backoff, f"{field}.backoff.base", "base") or 1_000
    cap = _duration(backoff, f"{field}.backoff.cap", "cap") or max(base, 300_000)
    if cap < base:
        raise InvalidInput(f"{field}.backoff.cap", "is below base; accepted: at least base")
    attempts = _int(spec, f"{field}.maxAttempts", "maxAttempts", 3, 1, 100)
    return TaskSpec(
        job_type=job_type,
        payload=None if template is not None else payload,
        template=template,
        retry=RetryPolicy(base_ms=base, cap_ms=cap, max_attempts=attempts),
        timeout_ms=_duration(spec, f"{field}.timeout", "timeout"),
    )


def _step(raw: object, field: str) -> StepSpec:
    if not isinstance(raw, dict):
        raise InvalidInput(field, "accepted: a JSON object with at least 'id'")
    step_id = raw.get("id")
    if not isinstance(step_id, str) or not _ID.fullmatch(step_id):
        raise InvalidInput(
            f"{field}.id", f"{step_id!r}; accepted: 1 to 100 of A-Z a-z 0-9 _ . - (a stable name)"
        )
    kind = _one_of(raw, f"{field}.kind", "kind", "task", KINDS)
    unknown = sorted(set(raw) - _STEP_FIELDS[kind], key=str)
    if unknown:
        raise InvalidInput(
            f"{field}.{unknown[0]}",
            f"not a field of a {kind} step; accepted: {', '.join(sorted(_STEP_FIELDS[kind]))}",
        )
    compensation = raw.get("compensation")
    if compensation is not None and (
        not isinstance(compensation, dict) or set(compensation) - _TASK_FIELDS
    ):
        raise InvalidInput(
            f"{field}.compensation",
            f"accepted: a task spec with fields {', '.join(sorted(_TASK_FIELDS))}",
        )
    common: dict[str, Any] = {
        "id": step_id,
        "kind": kind,
        "depends_on": _names(raw, f"{field}.dependsOn", "dependsOn"),
        "on_failure": _one_of(raw, f"{field}.onFailure", "onFailure", "retry", STEP_ON_FAILURE),
        "compensation": None
        if compensation is None
        else _task(compensation, f"{field}.compensation"),
    }
    if kind == "task":
        task = _task(raw, field)
        return StepSpec(
            **common,
            task=task,
            timeout_ms=task.timeout_ms,
            expected_duration_ms=_duration(raw, f"{field}.expectedDuration", "expectedDuration"),
        )
    if kind == "sleep":
        duration = _duration(raw, f"{field}.duration", "duration")
        if duration is None:
            raise InvalidInput(f"{field}.duration", "required for a sleep step, e.g. '7d'")
        return StepSpec(**common, duration_ms=duration)
    return StepSpec(
        **common,
        timeout_ms=_duration(raw, f"{field}.timeout", "timeout"),
        on_timeout=_one_of(raw, f"{field}.onTimeout", "onTimeout", "fail", ON_TIMEOUT),
        assignees=_names(raw, f"{field}.assignees", "assignees"),
        escalate_to=_names(raw, f"{field}.escalateTo", "escalateTo"),
        max_escalations=_int(raw, f"{field}.maxEscalations", "maxEscalations", 1, 0, 20),
        expected_duration_ms=_duration(raw, f"{field}.expectedDuration", "expectedDuration"),
    )


def _ancestors(steps: Mapping[str, StepSpec]) -> dict[str, frozenset[str]]:
    """Every step's transitive dependencies; `InvalidInput` naming a cycle if there is one."""
    done: dict[str, frozenset[str]] = {}

    def visit(step_id: str, path: tuple[str, ...]) -> frozenset[str]:
        if step_id in path:
            cycle = " -> ".join((*path[path.index(step_id) :], step_id))
            raise InvalidInput("steps", f"dependency cycle {cycle}; accepted: a DAG")
        if step_id not in done:
            found: set[str] = set()
            for dep in steps[step_id].depends_on:
                found |= {dep, *visit(dep, (*path, step_id))}
            done[step_id] = frozenset(found)
        return done[step_id]

    for step_id in steps:
        visit(step_id, ())
    return done


def _topological(steps: tuple[StepSpec, ...]) -> tuple[StepSpec, ...]:
    placed: set[str] = set()
    ordered: list[StepSpec] = []
    while len(ordered) < len(steps):
        for spec in steps:
            if spec.id not in placed and placed.issuperset(spec.depends_on):
                ordered.append(spec)
                placed.add(spec.id)
                break
    return tuple(ordered)


def _check_templates(
    steps: tuple[StepSpec, ...], ancestors: Mapping[str, frozenset[str]], fields: Mapping[str, str]
) -> None:
    for spec in steps:
        for task, where, own in (
            (spec.task, "payloadTemplate", False),
            (spec.compensation, "compensation.payloadTemplate", True),
        ):
            if task is None or task.template is None:
                continue
            readable = ancestors[spec.id] | ({spec.id} if own else set())
            for ref in sorted(step_references(task.template, where) - readable):
                raise InvalidInput(
                    f"{fields[spec.id]}.{where}",
                    f"reads steps.{ref}.output, but {ref!r} is not a step this one depends on "
                    f"(directly or not); accepted: outputs of {sorted(readable) or 'none'}",
                )


def parse_definition(body: object) -> WorkflowDefinition:
    """A JSON workflow definition checked and turned into a `WorkflowDefinition`."""
    if not isinstance(body, dict):
        raise InvalidInput("definition", "accepted: a JSON object")
    unknown = sorted(set(body) - _TOP_FIELDS, key=str)
    if unknown:
        raise InvalidInput(
            str(unknown[0]), f"unknown field; accepted: {', '.join(sorted(_TOP_FIELDS))}"
        )
    definition_id = body.get("definitionId")
    if not isinstance(definition_id, str) or not _ID.fullmatch(definition_id):
        raise InvalidInput(
            "definitionId", f"{definition_id!r}; accepted: 1 to 100 of A-Z a-z 0-9 _ . -"
        )
    if "version" not in body:
        raise InvalidInput("version", "required; accepted: an integer from 1 (the first version)")
    version = _int(body, "version", "version", 1, 1, 2**31 - 1)
    raw_steps = body.get("steps")
    if not isinstance(raw_steps, list) or not 1 <= len(raw_steps) <= MAX_STEPS:
        raise InvalidInput("steps", f"accepted: a list of 1 to {MAX_STEPS} step objects")
    parsed = tuple(_step(raw, f"steps[{i}]") for i, raw in enumerate(raw_steps))
    fields: dict[str, str] = {}
    for i, spec in enumerate(parsed):
        if spec.id in fields:
            raise InvalidInput(
                f"steps[{i}].id", f"{spec.id!r} is also {fields[spec.id]}; accepted: unique ids"
            )
        fields[spec.id] = f"steps[{i}]"
    for spec in parsed:
        for dep in spec.depends_on:
            if dep not in fields:
                raise InvalidInput(
                    f"{fields[spec.id]}.dependsOn",
                    f"{dep!r} is not a step of this definition; accepted: {sorted(fields)}",
                )
    ancestors = _ancestors({spec.id: spec for spec in parsed})
    _check_templates(parsed, ancestors, fields)
    return WorkflowDefinition(
        definition_id=definition_id,
        version=version,
        steps=_topological(parsed),
        on_failure=_one_of(body, "onFailure", "onFailure", "compensate", ON_FAILURE),
        on_cancel=_one_of(body, "onCancel", "onCancel", "compensate", ON_CANCEL),
    )
