"""The `WorkflowInput` record of `workflows.inputs` as dicts, pure: who builds one (the SDK,
the timer, the orchestrator's tests) and who reads one (the orchestrator) agree here.

`body` is the input as `input_to_json` writes it; the other fields repeat what a reader
routes by (`workflow_id`, `kind`, `at`) and what only a start carries (the definition).
Timer-made inputs have deterministic ids (`outcome_input_id`, `fired_input_id`): a timer
transaction retried after a crash writes the same ids.
"""

from __future__ import annotations

import json

from tickwheel.core.workflow.inputs import Input, input_from_json, input_to_json
from tickwheel.records import WorkflowInput

__all__ = ["fired_input_id", "input_of_record", "input_record", "outcome_input_id"]


def input_record(
    workflow_id: str,
    item: Input,
    input_id: str,
    *,
    definition_id: str | None = None,
    definition_version: int | None = None,
) -> WorkflowInput:
    """The `WorkflowInput` record telling `workflow_id` about `item`."""
    return {
        "input_id": input_id,
        "workflow_id": workflow_id,
        "kind": item.kind,
        "at": item.at_ms,
        "body": json.dumps(input_to_json(item), separators=(",", ":")),
        "definition_id": definition_id,
        "definition_version": definition_version,
        "actor": getattr(item, "actor", None),
    }


def input_of_record(record: WorkflowInput) -> Input:
    """The fold's input in a `WorkflowInput` record; `ValueError` saying what is wrong."""
    try:
        body = json.loads(record["body"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"body is not JSON text ({exc})") from exc
    if not isinstance(body, dict):
        raise ValueError("body is not a JSON object; accepted: input_to_json's form")
    if body.get("kind") != record["kind"]:
        raise ValueError(f"body's kind {body.get('kind')!r} is not the record's {record['kind']!r}")
    try:
        return input_from_json(body)
    except TypeError as exc:
        raise ValueError(f"{record['kind']}: {exc}") from exc


def outcome_input_id(kind: str, execution_id: str, attempt: int) -> str:
    return f"timer:{kind}:{execution_id}:{attempt}"


def fired_input_id(workflow_id: str, timer_id: str, fire_at_ms: int) -> str:
    return f"timer:fired:{workflow_id}:{timer_id}:{fire_at_ms}"
