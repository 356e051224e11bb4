"""The deploy gate's core on the golden histories: a change that renames a step, reorders two,
changes a step's input, adds a step in the middle or removes one is reported for each open
instance it affects; a change guarded by `ctx.patched`, or made at the end, passes."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from tests.unit.core.codeflow import flows
from tickwheel.core.codeflow import HistoryEvent, events_from_json
from tickwheel.errors import InvalidInput
from tickwheel.sdk import WorkflowContext, workflow
from tickwheel.sdk.workflow_gate import check_histories, workflows_in

GOLDEN = Path(__file__).resolve().parents[1] / "core" / "codeflow" / "golden"
# Open instances of `order` at three points, and a finished one.
OPEN = ["crash_mid_step", "open_before_its_end"]
FINISHED = ["happy_path"]


def histories(names: list[str]) -> list[list[HistoryEvent]]:
    return [
        events_from_json(json.loads((GOLDEN / f"{n}.json").read_text())["history"]) for n in names
    ]


def early() -> list[HistoryEvent]:
    """An open instance that has only scheduled its first step."""
    started, scheduled = histories(["happy_path"])[0][:2]
    data = {**started.data, "workflow_id": "early-1"}
    return [HistoryEvent(started.type, started.at_ms, None, started.name, data), scheduled]


def module_with(*functions: object) -> types.ModuleType:
    module = types.ModuleType("new_code")
    for i, fn in enumerate(functions):
        setattr(module, f"f{i}", fn)
    return module


@pytest.mark.parametrize(
    ("code", "failing"),
    [
        ("order", []),
        ("order_renamed_function", []),
        ("order_patched", []),
        ("order_added_at_end", []),
        # An instance that has not reached the renamed or added step is not affected.
        ("order_renamed", ["crash_mid_step-1", "open_before_its_end-1", "happy_path-1"]),
        (
            "order_reordered",
            ["early-1", "crash_mid_step-1", "open_before_its_end-1", "happy_path-1"],
        ),
        (
            "order_changed_input",
            ["early-1", "crash_mid_step-1", "open_before_its_end-1", "happy_path-1"],
        ),
        ("order_added_in_middle", ["crash_mid_step-1", "open_before_its_end-1", "happy_path-1"]),
        ("order_missing_step", ["crash_mid_step-1", "open_before_its_end-1", "happy_path-1"]),
    ],
)
def test_the_gate_reports_each_instance_a_change_affects(code: str, failing: list[str]) -> None:
    new = workflows_in(module_with(getattr(flows, code), flows.basket))
    report = check_histories(new, [early(), *histories(OPEN + FINISHED)])
    assert [f.workflow_id for f in report.failures] == failing
    assert report.passed == (not failing)
    for finding in report.failures:
        assert finding.verdict == "diverges"
        assert finding.step and finding.index is not None
        assert finding.line().startswith(f"{finding.workflow_id} (order): diverges at history")


def test_a_passing_open_instance_says_what_the_new_code_does_next() -> None:
    report = check_histories(
        workflows_in(module_with(flows.order_added_at_end)), histories(["open_before_its_end"])
    )
    [finding] = report.findings
    assert finding.verdict == "passes"
    assert finding.next_commands == ("step_scheduled notify",)


def test_a_history_of_a_workflow_the_new_code_lacks_is_reported() -> None:
    report = check_histories(workflows_in(module_with(flows.basket)), histories(["happy_path"]))
    [finding] = report.failures
    assert (finding.verdict, finding.detail) == ("unknown_workflow", "the new code has: basket")


def test_new_code_that_reads_the_clock_while_replaying_is_refused() -> None:
    async def sneaky(ctx: WorkflowContext, order: dict[str, object]) -> None:
        opener = open
        opener("/dev/null", "w").close()

    new = workflows_in(module_with(workflow("order")(sneaky)))
    [finding] = check_histories(new, histories(["happy_path"])).failures
    assert finding.verdict == "refused" and "open() (a file)" in finding.detail


def test_a_name_declared_twice_is_refused() -> None:
    with pytest.raises(InvalidInput, match="workflow 'order' is declared twice"):
        workflows_in(module_with(flows.order, flows.order_renamed))
    assert workflows_in(module_with(flows.order, flows.order))["order"].fn is flows.order
