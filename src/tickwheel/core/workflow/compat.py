"""Whether version N+1 of a workflow definition may be published beside version N.

Instances stay pinned to the version they started with, so an edit cannot break them by
itself; what it can break is everything that reads across versions: a step id that means
one thing in N and another in N+1 makes history, dashboards and operator repair lie, and a
removed step that a running instance is in leaves an operator looking at a step the
current definition no longer names. `check_compatible` lists every such reason; an empty
list means compatible. Publishing as a new `definitionId` is the way around a refusal.
"""

from __future__ import annotations

from collections.abc import Iterable

from tickwheel.core.workflow.definition import WorkflowDefinition, parse_definition
from tickwheel.errors import InvalidInput

__all__ = ["check_compatible"]


def check_compatible(
    old: WorkflowDefinition,
    new: WorkflowDefinition | object,
    live_steps: Iterable[str] = (),
) -> list[str]:
    """The reasons `new` may not follow `old`; `[]` if it may.

    `new` may be a parsed definition or the raw JSON body (then dependencies that do not
    resolve and cycles come back as reasons rather than as an exception). `live_steps` are
    the step ids that running instances of `old` are in (started and not ended).
    """
    if not isinstance(new, WorkflowDefinition):
        try:
            new = parse_definition(new)
        except InvalidInput as exc:
            return [f"{exc.field}: {exc.message}"]
    reasons: list[str] = []
    if new.definition_id != old.definition_id:
        reasons.append(
            f"definitionId {new.definition_id!r} is not {old.definition_id!r}; a check is "
            "between two versions of one definition"
        )
    if new.version <= old.version:
        reasons.append(
            f"version {new.version} does not follow {old.version}; accepted: a higher version"
        )
    for spec in old.steps:
        after = new.step(spec.id)
        if after is None:
            continue
        if after.kind != spec.kind:
            reasons.append(
                f"step {spec.id!r} was a {spec.kind} step and would be a {after.kind} step; "
                "a step id keeps its meaning: give the new step a new id"
            )
        elif after.job_type != spec.job_type:
            reasons.append(
                f"step {spec.id!r} ran job type {spec.job_type!r} and would run "
                f"{after.job_type!r}; a step id keeps its meaning: give the new step a new id"
            )
    removed = old.step_ids - new.step_ids
    for step_id in sorted(set(live_steps) & removed):
        reasons.append(
            f"step {step_id!r} is removed, but running instances are in it; wait for them "
            "to finish or keep the step"
        )
    return reasons
