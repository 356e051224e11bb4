"""The deploy gate's core: replay recorded histories against new workflow code, before it runs
them (decision 0216). `tickwheel workflows check --module NEW` is this, fed the histories of
the open instances (and a sample of finished ones) read from the deployment.

    from tickwheel.sdk.workflow_gate import check_histories, workflows_in
    report = check_histories(workflows_in(importlib.import_module("myapp.flows")), histories)
    for finding in report.failures:
        print(finding.line())

Each history gets a verdict: `passes` (the new code takes the recorded path; what it would do
next is in `next_commands`), `diverges` (the step, the history position and what changed),
`refused` (the new code reads the clock, the network... while replaying) or `unknown_workflow`
(no workflow of that name in the new code).
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tickwheel.core.codeflow import (
    WORKFLOW_ATTRIBUTE,
    Divergence,
    HistoryEvent,
    NondeterministicCall,
    WorkflowSpec,
    WorkflowStuck,
    replay,
)
from tickwheel.errors import InvalidInput

__all__ = ["GateFinding", "GateReport", "check_histories", "workflows_in"]

Verdict = Literal["passes", "diverges", "refused", "unknown_workflow"]


def workflows_in(*modules: types.ModuleType) -> dict[str, WorkflowSpec]:
    """The `@workflow` functions defined in `modules`, by workflow name; a name declared twice
    (by two different functions) is refused."""
    found: dict[str, WorkflowSpec] = {}
    for module in modules:
        for value in vars(module).values():
            spec = getattr(value, WORKFLOW_ATTRIBUTE, None)
            if not isinstance(spec, WorkflowSpec):
                continue
            other = found.get(spec.name)
            if other is not None and other.fn is not spec.fn:
                raise InvalidInput(
                    "workflow",
                    f"workflow {spec.name!r} is declared twice: by {_where(other)} and "
                    f"{_where(spec)}; a name belongs to one function",
                )
            found[spec.name] = spec
    return found


def _where(spec: WorkflowSpec) -> str:
    return f"{spec.fn.__module__}.{spec.fn.__qualname__}"


@dataclass(frozen=True, slots=True)
class GateFinding:
    """One history's verdict against the new code."""

    workflow_id: str
    workflow: str
    verdict: Verdict
    detail: str = ""
    step: str | None = None
    index: int | None = None
    next_commands: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for a person: `order-7 (order): diverges at history event 3, ...`."""
        where = "" if self.index is None else f" at history event {self.index}"
        what = f" {self.step}:" if self.step else ""
        tail = f"{what} {self.detail}" if self.detail else ""
        return f"{self.workflow_id} ({self.workflow}): {self.verdict}{where}{tail}"


@dataclass(frozen=True, slots=True)
class GateReport:
    """Every history's finding; the gate passes when none fails."""

    findings: list[GateFinding] = field(default_factory=list)

    @property
    def failures(self) -> list[GateFinding]:
        return [f for f in self.findings if f.verdict != "passes"]

    @property
    def passed(self) -> bool:
        return not self.failures


def check_histories(
    workflows: Mapping[str, WorkflowSpec], histories: Iterable[Sequence[HistoryEvent]]
) -> GateReport:
    """Replay each history (one run's events, `workflow_started` first) against the workflow
    of its name in `workflows`."""
    findings: list[GateFinding] = []
    for history in histories:
        if not history or history[0].type != "workflow_started":
            raise InvalidInput("history", "a history starts with its workflow_started event")
        start = history[0]
        name = str(start.name)
        workflow_id = str(start.data.get("workflow_id", "?"))
        spec = workflows.get(name)
        if spec is None:
            known = ", ".join(sorted(workflows)) or "(none)"
            findings.append(
                GateFinding(workflow_id, name, "unknown_workflow", f"the new code has: {known}")
            )
            continue
        try:
            activation = replay(spec, history)
        except Divergence as exc:
            findings.append(
                GateFinding(workflow_id, name, "diverges", exc.detail, exc.step, exc.index)
            )
        except (NondeterministicCall, WorkflowStuck) as exc:
            findings.append(GateFinding(workflow_id, name, "refused", str(exc)))
        else:
            upcoming = tuple(
                f"{c.type} {c.name}" if c.name else c.type for c in activation.commands
            )
            findings.append(GateFinding(workflow_id, name, "passes", next_commands=upcoming))
    return GateReport(findings)
