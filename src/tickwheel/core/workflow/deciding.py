"""What every workflow kind's `decide` returns, and the one thing it checks before deciding:
that the instance is folded with the definition version it is pinned to. Beneath the kinds
(`kinds` imports each kind, so a kind cannot import `kinds`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from tickwheel.core.workflow.events import Event

__all__ = ["Decided", "check_pinned"]


class Decided(NamedTuple):
    """An input decided: the state after its events, the events, and the instance's status
    right after each one."""

    state: Any
    events: list[Event]
    statuses: list[str]


def check_pinned(state: Any, definition: Any) -> None:
    """`ValueError` unless `definition` is the version the instance is pinned to (a caller's
    bug: the orchestrator looks the definition up by the state's own id and version)."""
    if (definition.definition_id, definition.version) != (
        state.definition_id,
        state.definition_version,
    ):
        raise ValueError(
            f"instance {state.workflow_id} is pinned to {state.definition_id} "
            f"v{state.definition_version}, not {definition.definition_id} v{definition.version}"
        )
