"""Durable workflows, pure: definitions as data and an instance's state as a fold over its
events (docs/decisions/0059, docs/workflows.md).

* `definition` — `parse_definition` of the JSON body into a `WorkflowDefinition`.
* `compat` — `check_compatible(old, new, live_steps)`, the reasons N+1 may not follow N.
* `template` — step payload templates over the input and earlier outputs.
"""

from tickwheel.core.workflow.compat import check_compatible
from tickwheel.core.workflow.definition import (
    StepSpec,
    TaskSpec,
    WorkflowDefinition,
    parse_definition,
)

__all__ = [
    "StepSpec",
    "TaskSpec",
    "WorkflowDefinition",
    "check_compatible",
    "parse_definition",
]
