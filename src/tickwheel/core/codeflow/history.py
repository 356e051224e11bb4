"""The history of a code workflow's run: one list of events, the only thing replay reads.

Two families share one record (`HistoryEvent`), told apart by `type`:

* **Inputs** happen to the instance and are delivered to the code one at a time, in order:
  `workflow_started`, `step_completed`, `step_failed`, `timer_fired`, `signal_received`,
  `child_completed`, `child_failed`, `cancel_requested`.
* **Commands** are what the code (or the engine on its behalf) decided, numbered by
  `position` in the order they were issued: `step_scheduled`, `timer_started`,
  `signal_wait_started`, `timer_cancelled`, `side_effect_recorded`, `patch_marker`,
  `rollback_registered`, `child_started`, `workflow_parked`, and the endings
  `workflow_completed`, `workflow_failed`, `workflow_cancelled`, `continued_as_new`.

An input that answers a command names the command's `position` (a step's completion, a timer
firing). Everything in `data` is JSON: results and inputs are stored as data, never pickled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "COMMANDS",
    "ENDINGS",
    "INPUTS",
    "HistoryEvent",
    "JsonObject",
    "as_data",
    "digest",
    "events_from_json",
    "events_to_json",
]

INPUTS = frozenset(
    {
        "workflow_started",
        "step_completed",
        "step_failed",
        "timer_fired",
        "signal_received",
        "child_completed",
        "child_failed",
        "cancel_requested",
    }
)
ENDINGS = frozenset(
    {"workflow_completed", "workflow_failed", "workflow_cancelled", "continued_as_new"}
)
COMMANDS = (
    frozenset(
        {
            "step_scheduled",
            "timer_started",
            "signal_wait_started",
            "timer_cancelled",
            "side_effect_recorded",
            "patch_marker",
            "rollback_registered",
            "child_started",
            "workflow_parked",
        }
    )
    | ENDINGS
)
_FIELDS = ("type", "at_ms", "position", "name")
# A JSON object as it is read from or written to a history (never a record of ours: those are
# typed in tickwheel.records).
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One event of a run's history. `position` is the command's number (or, on an input,
    the number of the command it answers); `name` is the step, timer, signal, side effect,
    change id or workflow it is about; `data` holds the rest, as JSON."""

    type: str
    at_ms: int = 0
    position: int | None = None
    name: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in INPUTS and self.type not in COMMANDS:
            accepted = ", ".join(sorted(INPUTS | COMMANDS))
            raise ValueError(f"unknown history event type {self.type!r}; accepted: {accepted}")

    @property
    def is_command(self) -> bool:
        return self.type in COMMANDS

    def to_json(self) -> JsonObject:
        """A flat JSON object: the four fields (those set), then `data`'s keys."""
        out: JsonObject = {"type": self.type, "at_ms": self.at_ms}
        if self.position is not None:
            out["position"] = self.position
        if self.name is not None:
            out["name"] = self.name
        out.update(self.data)
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> HistoryEvent:
        if not isinstance(raw, Mapping) or "type" not in raw:
            raise ValueError(f"a history event is a JSON object with a 'type'; got {raw!r}")
        data = {k: v for k, v in raw.items() if k not in _FIELDS}
        position = raw.get("position")
        return cls(
            type=str(raw["type"]),
            at_ms=int(raw.get("at_ms", 0)),
            position=None if position is None else int(position),
            name=raw.get("name"),
            data=data,
        )

    def same_decision(self, other: HistoryEvent) -> bool:
        """Whether two command events say the same thing (when they were written aside)."""
        return (
            self.type == other.type
            and self.position == other.position
            and self.name == other.name
            and dict(self.data) == dict(other.data)
        )


def events_to_json(events: Iterable[HistoryEvent]) -> list[JsonObject]:
    return [event.to_json() for event in events]


def events_from_json(raw: Iterable[Mapping[str, Any]]) -> list[HistoryEvent]:
    return [HistoryEvent.from_json(item) for item in raw]


def as_data(value: Any, what: str) -> Any:
    """`value` as it reads back from JSON (tuples become lists); a value that is not JSON
    data is refused, saying what it was for."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{what} must be JSON data (dict, list, str, int, float, bool, None): {exc}"
        ) from None


def digest(value: Any) -> str:
    """A short, stable digest of JSON data (keys sorted), compared on replay."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
