"""A code workflow's definition as the catalogue holds it (decision 0217): its name, the
version the catalogue numbered, and the digest of the code that version stands for. The code
itself lives in the worker that has the module; the orchestrator never runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tickwheel.core.codeflow.history import JsonObject
from tickwheel.errors import InvalidInput

__all__ = ["CODE_KIND", "CodeWorkflowDefinition", "check_workflow_name", "parse_code_definition"]

CODE_KIND = "code"
# A code workflow's tasks run as the job type `workflow:<name>`, and a job type is at most
# 100 characters: so a name is at most 91.
MAX_NAME_LENGTH = 91
_ID = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_NAME_LENGTH}}}")
_FIELDS = frozenset({"kind", "definitionId", "version", "codeVersion", "tenantId", "description"})


@dataclass(frozen=True, slots=True)
class CodeWorkflowDefinition:
    definition_id: str
    version: int
    code_version: str

    def to_json(self) -> JsonObject:
        return {
            "kind": CODE_KIND,
            "definitionId": self.definition_id,
            "version": self.version,
            "codeVersion": self.code_version,
        }


def check_workflow_name(name: object, field: str) -> str:
    """A code workflow's name, or `InvalidInput` naming `field` and what is accepted."""
    if not isinstance(name, str) or not _ID.fullmatch(name):
        raise InvalidInput(
            field, f"{name!r}; accepted: 1 to {MAX_NAME_LENGTH} of A-Z a-z 0-9 _ . -"
        )
    return name


def parse_code_definition(body: object) -> CodeWorkflowDefinition:
    """A `{"kind": "code", ...}` body checked; `InvalidInput` names the field at fault."""
    if not isinstance(body, dict):
        raise InvalidInput("definition", "accepted: a JSON object")
    unknown = sorted(set(body) - _FIELDS, key=str)
    if unknown:
        raise InvalidInput(
            str(unknown[0]), f"unknown field; accepted: {', '.join(sorted(_FIELDS))}"
        )
    if body.get("kind") != CODE_KIND:
        raise InvalidInput("kind", f"{body.get('kind')!r}; accepted: {CODE_KIND!r}")
    name = check_workflow_name(body.get("definitionId"), "definitionId")
    version = body.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version < 2**31:
        raise InvalidInput("version", f"{version!r}; accepted: an integer from 1")
    code_version = body.get("codeVersion")
    if not isinstance(code_version, str) or not 1 <= len(code_version) <= 200:
        raise InvalidInput("codeVersion", f"{code_version!r}; accepted: 1 to 200 characters")
    return CodeWorkflowDefinition(name, version, code_version)
