"""Payload templates of workflow steps: JSON documents whose strings may name the workflow's
input and earlier steps' outputs.

A template is a JSON object. A string that is exactly one placeholder, `"{{ input.order.id }}"`,
becomes the value found there, whatever its JSON type; a placeholder inside a longer string,
`"order {{ input.order.id }}"`, is replaced by the value as text (a string as is, anything
else as compact JSON). Roots: `input` (the start input), `steps.<id>.output` (a step's
output), `workflowId`. A path that leads nowhere (a skipped step, a missing key) renders as
`null`: the fold must not fail on data, and the step receiving it decides what null means.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from tickwheel.errors import InvalidInput

__all__ = ["ACCEPTED", "render", "step_references"]

ACCEPTED = (
    "placeholders {{ input.<path> }}, {{ steps.<step id>.output.<path> }} or {{ workflowId }}"
)
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


def _paths(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if "{{" in value:
            found = _PLACEHOLDER.findall(value)
            if value.count("{{") != len(found):
                raise ValueError(f"{value[:60]!r} has an unclosed or nested placeholder")
            yield from found
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _paths(item)
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item)


def _parts(path: str) -> list[str]:
    parts = path.split(".")
    if not all(_SEGMENT.fullmatch(part) for part in parts):
        raise ValueError(f"{{{{ {path} }}}} is not a dotted path")
    if parts[0] == "workflowId" and len(parts) == 1:
        return parts
    if parts[0] == "input":
        return parts
    if parts[0] == "steps" and len(parts) >= 3 and parts[2] == "output":
        return parts
    raise ValueError(f"{{{{ {path} }}}} has an unknown root")


def step_references(template: object, field: str) -> frozenset[str]:
    """The step ids `template` reads outputs of; `InvalidInput(field)` if it is malformed."""
    if not isinstance(template, dict):
        raise InvalidInput(field, f"a JSON {type(template).__name__}; accepted: a JSON object")
    refs: set[str] = set()
    try:
        for path in _paths(template):
            parts = _parts(path)
            if parts[0] == "steps":
                refs.add(parts[1])
    except ValueError as exc:
        raise InvalidInput(field, f"{exc}; accepted: {ACCEPTED}") from None
    return frozenset(refs)


def _lookup(context: Mapping[str, Any], path: str) -> Any:
    value: Any = context
    for part in _parts(path):
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _render(value: Any, context: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return _lookup(context, whole.group(1))
        return _PLACEHOLDER.sub(lambda m: _as_text(_lookup(context, m.group(1))), value)
    if isinstance(value, Mapping):
        return {key: _render(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, context) for item in value]
    return value


def render(
    template: Mapping[str, Any],
    *,
    workflow_id: str,
    workflow_input: Any,
    outputs: Mapping[str, Any],
) -> dict[str, Any]:
    """The payload `template` stands for, given the instance's input and step outputs.

    The template was checked by `step_references` when the definition was parsed, so this
    never raises.
    """
    context = {
        "workflowId": workflow_id,
        "input": workflow_input,
        "steps": {step: {"output": output} for step, output in outputs.items()},
    }
    rendered = _render(template, context)
    assert isinstance(rendered, dict)
    return rendered
