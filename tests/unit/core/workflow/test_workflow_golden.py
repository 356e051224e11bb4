"""Golden histories of the workflow fold, the way Temporal replays recorded histories: each
fixture in workflow_golden/ holds a definition and the inputs an instance received, and the
events and commands the fold must answer each input with. A change to what the fold decides
fails here until the fixtures are re-recorded on purpose:
`python -m tests.unit.core.workflow.test_workflow_golden --record` (then review the diff).
"""

from __future__ import annotations

import json
import sys
from functools import reduce
from pathlib import Path
from typing import Any

import pytest

from tickwheel.core.workflow import (
    Event,
    command_to_json,
    evolve,
    initial_state,
    input_from_json,
    parse_definition,
    step,
)

GOLDEN = Path(__file__).parent / "workflow_golden"


def replay(fixture: dict[str, Any]) -> dict[str, Any]:
    """Feed the fixture's inputs through the fold; what it answered, comparably."""
    definition = parse_definition(fixture["definition"])
    state = initial_state(fixture["workflow_id"], definition)
    answers = []
    for raw in fixture["inputs"]:
        state, events, commands = step(state, definition, input_from_json(raw))
        answers.append({
            "events": [e.to_json() for e in events],
            "commands": [command_to_json(c) for c in commands],
        })  # fmt: skip
    return {
        "answers": answers,
        "status": state.status,
        "completed": list(state.completed),
        "compensated": list(state.compensated),
        "open_timers": sorted(state.timers),
        "open_alerts": sorted(state.alerts),
    }


def fixtures() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_the_fold_answers_what_was_recorded(path: Path) -> None:
    fixture = json.loads(path.read_text())
    got = replay(fixture)
    expected = fixture["expected"]
    for i, (a, b) in enumerate(zip(got["answers"], expected["answers"], strict=True)):
        assert a == b, f"{path.name}: input {i} {fixture['inputs'][i]}: {fixture['about']}"
    assert got == expected, f"{path.name}: {fixture['about']}"


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_folding_the_recorded_events_rebuilds_the_final_state(path: Path) -> None:
    fixture = json.loads(path.read_text())
    definition = parse_definition(fixture["definition"])
    history = [Event.from_json(e) for a in fixture["expected"]["answers"] for e in a["events"]]
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    state = reduce(evolve, history, initial_state(fixture["workflow_id"], definition))
    assert state.status == fixture["expected"]["status"]
    assert list(state.completed) == fixture["expected"]["completed"]


def test_there_are_golden_fixtures() -> None:
    assert len(fixtures()) >= 10


if __name__ == "__main__" and "--record" in sys.argv:
    for path in fixtures():
        fixture = json.loads(path.read_text())
        fixture["expected"] = replay(fixture)
        path.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
        print(f"recorded {path.name}")
