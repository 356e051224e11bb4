"""Golden histories of the code-workflow replay engine, the way Temporal replays recorded
histories: each file in golden/ holds a history recorded with one version of a workflow
(tests/unit/core/codeflow/flows.py), and what replaying it against each version of the code
must give: the same path (and what comes next), or a `Divergence` naming the step and the
history position.

The histories are data: replaying them is the test, and a change to what the engine records
fails `test_recording_again_gives_the_same_history` until they are re-recorded on purpose:
`python -m tests.unit.core.codeflow.test_codeflow_golden --record` (then review the diff).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.core.codeflow import flows
from tickwheel.core.codeflow import (
    Activation,
    Divergence,
    HistoryEvent,
    WorkflowRun,
    events_from_json,
    events_to_json,
    replay,
)

GOLDEN = Path(__file__).parent / "golden"
T0 = 1_800_000_000_000
HOUR = 3_600_000
ORDER = {"id": "o-1", "amount": 10}
AUTH = {"auth": "auth-o-1", "amount": 10}


def done(position: int, result: Any, at: int = T0, attempts: int = 1) -> dict[str, Any]:
    return {
        "type": "step_completed",
        "at_ms": at,
        "position": position,
        "result": result,
        "attempts": attempts,
    }


def failed(position: int, error: str, at: int = T0) -> dict[str, Any]:
    return {
        "type": "step_failed",
        "at_ms": at,
        "position": position,
        "error": error,
        "error_kind": "permanent",
        "attempts": 1,
    }


def fired(position: int, at: int) -> dict[str, Any]:
    return {"type": "timer_fired", "at_ms": at, "position": position}


def signal(name: str, signal_id: str, payload: Any, at: int) -> dict[str, Any]:
    return {
        "type": "signal_received",
        "at_ms": at,
        "name": name,
        "signal_id": signal_id,
        "payload": payload,
    }


# Each scenario: the workflow it is recorded with, its input, the inputs it receives after
# its start (in order; each answered by the code before the next), whether the history stops
# before the commands the last input caused (a worker that died before recording them), and
# the replays to check: the flow replayed and what it must give.
SCENARIOS: dict[str, dict[str, Any]] = {
    "happy_path": {
        "about": "three steps, each completed: the order is captured",
        "workflow": "order",
        "input": ORDER,
        "inputs": [done(1, AUTH), done(2, "reservation-o-1"), done(3, {"captured": 10})],
        "replays": {
            "order": {"status": "completed", "result": {"captured": 10}, "commands": []},
            "order_renamed_function": {"status": "completed", "commands": []},
            "order_patched": {"status": "completed", "commands": []},
            "order_added_at_end": {"status": "completed", "commands": []},
            "order_renamed": {
                "divergence": "the history has step 'reserve_inventory'#1 at position 2; the code now runs step 'hold_inventory'#1",
                "index": 3,
            },
            "order_reordered": {
                "divergence": "the history has step 'authorize'#1 at position 1; the code now runs step 'reserve_inventory'#1",
                "index": 1,
            },
            "order_changed_input": {
                "divergence": "step 'authorize'#1 was recorded with input [{'id': 'o-1', 'amount': 10}]",
                "index": 1,
            },
            "order_added_in_middle": {
                "divergence": "the history has step 'reserve_inventory'#1 at position 2; the code now runs step 'audit'#1",
                "index": 3,
            },
            "order_missing_step": {
                "divergence": "the history has step 'reserve_inventory'#1 at position 2; the code now runs step 'capture_payment'#1",
                "index": 3,
            },
        },
    },
    "crash_mid_step": {
        "about": "the worker died while reserve_inventory ran: replay hands back authorize's"
        " result and waits on the step already scheduled, scheduling nothing again",
        "workflow": "order",
        "input": ORDER,
        "inputs": [done(1, AUTH)],
        "replays": {
            "order": {
                "status": "running",
                "commands": [],
                "waiting_on": ["step 'reserve_inventory'#1"],
            },
            "order_added_at_end": {"status": "running", "commands": []},
            "order_added_in_middle": {
                "divergence": "the history has step 'reserve_inventory'#1 at position 2; the code now runs step 'audit'#1",
                "index": 3,
            },
        },
    },
    "open_before_its_end": {
        "about": "every step completed, the worker died before recording the end: a step"
        " added at the end is what comes next, not a divergence",
        "workflow": "order",
        "input": ORDER,
        "inputs": [done(1, AUTH), done(2, "reservation-o-1"), done(3, {"captured": 10})],
        "cut_last_commands": True,
        "replays": {
            "order": {"status": "completed", "commands": [["workflow_completed", None]]},
            "order_added_at_end": {"status": "running", "commands": [["step_scheduled", "notify"]]},
            "order_missing_step": {
                "divergence": "the code now runs step 'capture_payment'#1",
                "index": 3,
            },
        },
    },
    "gather_of_parallel_steps": {
        "about": "asyncio.gather over three ctx.run: scheduled together, completed in reverse",
        "workflow": "basket",
        "input": ["a", "b", "c"],
        "inputs": [done(3, 5, T0 + 30), done(2, 4, T0 + 40), done(1, 3, T0 + 50)],
        "replays": {"basket": {"status": "completed", "result": 12, "commands": []}},
    },
    "sleep_then_signal": {
        "about": "now() recorded, a 24 h sleep fired, a signal awaited and received",
        "workflow": "approval",
        "input": ORDER,
        "inputs": [
            fired(2, T0 + 24 * HOUR),
            signal("approval", "s-1", {"ok": True}, T0 + 25 * HOUR),
        ],
        "replays": {
            "approval": {"status": "completed", "commands": [], "query": {"stage": "decided"}}
        },
    },
    "signal_before_wait_is_buffered": {
        "about": "the approval arrives during the sleep: buffered, taken at once by the wait",
        "workflow": "approval",
        "input": ORDER,
        "inputs": [signal("approval", "s-1", {"ok": True}, T0 + HOUR), fired(2, T0 + 24 * HOUR)],
        "replays": {"approval": {"status": "completed", "commands": []}},
    },
    "signal_timeout": {
        "about": "no approval within 72 h: wait_signal returns None",
        "workflow": "approval",
        "input": ORDER,
        "inputs": [fired(2, T0 + 24 * HOUR), fired(3, T0 + 96 * HOUR)],
        "replays": {"approval": {"status": "completed", "commands": []}},
    },
    "duplicate_signal_id": {
        "about": "the same signal id delivered twice counts once",
        "workflow": "two_signals",
        "input": None,
        "inputs": [
            signal("item", "s-1", "x", T0 + 1),
            signal("item", "s-1", "x", T0 + 2),
            signal("item", "s-2", "y", T0 + 3),
        ],
        "replays": {"two_signals": {"status": "completed", "result": ["x", "y"], "commands": []}},
    },
    "saga_failure_compensates_in_reverse": {
        "about": "decline fails for good: release_inventory, then release_authorization, then"
        " the failure",
        "workflow": "saga",
        "input": ORDER,
        "inputs": [
            done(1, AUTH),
            done(3, "reservation-o-1"),
            fired(5, T0 + HOUR),
            failed(6, "PermanentError: card declined", T0 + HOUR),
            done(7, None, T0 + HOUR),
            done(8, None, T0 + HOUR),
        ],
        "replays": {"saga": {"status": "failed", "commands": []}},
    },
    "cancel_compensates": {
        "about": "cancelled during its sleep: the rollbacks run in reverse, then cancelled",
        "workflow": "saga",
        "input": ORDER,
        "inputs": [
            done(1, AUTH),
            done(3, "reservation-o-1"),
            {"type": "cancel_requested", "at_ms": T0 + 60_000, "reason": "customer"},
            done(6, None, T0 + 61_000),
            done(7, None, T0 + 62_000),
        ],
        "replays": {"saga": {"status": "cancelled", "commands": []}},
    },
    "compensation_fails_parks": {
        "about": "a compensation that fails finally parks the instance",
        "workflow": "saga",
        "input": ORDER,
        "inputs": [
            done(1, AUTH),
            done(3, "reservation-o-1"),
            fired(5, T0 + HOUR),
            failed(6, "PermanentError: card declined", T0 + HOUR),
            failed(7, "RuntimeError: warehouse down", T0 + HOUR),
        ],
        "replays": {"saga": {"status": "parked", "commands": []}},
    },
    "child_workflows": {
        "about": "two children started one after the other, each awaited for its result",
        "workflow": "parent",
        "input": [ORDER, {"id": "o-2", "amount": 20}],
        "inputs": [
            {
                "type": "child_completed",
                "at_ms": T0 + 10,
                "position": 1,
                "result": {"captured": 10},
            },
            {
                "type": "child_completed",
                "at_ms": T0 + 20,
                "position": 2,
                "result": {"captured": 20},
            },
        ],
        "replays": {
            "parent": {
                "status": "completed",
                "result": [{"captured": 10}, {"captured": 20}],
                "commands": [],
            },
        },
    },
    "continue_as_new": {
        "about": "a run that sleeps a day, then continues as new with the next count",
        "workflow": "counter",
        "input": 1,
        "inputs": [fired(1, T0 + 24 * HOUR)],
        "replays": {"counter": {"status": "continued_as_new", "commands": []}},
    },
    "patched_new_code": {
        "about": "recorded by the patched code: its marker replays the new branch",
        "workflow": "order_patched",
        "input": ORDER,
        "inputs": [
            done(1, AUTH),
            done(3, "audited"),
            done(4, "reservation-o-1"),
            done(5, {"captured": 10}),
        ],
        "replays": {
            "order_patched": {"status": "completed", "commands": []},
            "order": {
                "divergence": "the history has step 'audit'#1 at position 3; the code now runs step 'reserve_inventory'#1",
                "index": 4,
            },
        },
    },
}


def record(name: str) -> dict[str, Any]:
    """Run a scenario through the engine, one input at a time, as a live instance is."""
    scenario = SCENARIOS[name]
    spec = getattr(flows, scenario["workflow"])
    started = HistoryEvent(
        "workflow_started",
        T0,
        name=spec.__tickwheel_workflow__.name,
        data={"workflow_id": f"{name}-1", "run": 1, "input": scenario["input"], "seed": name},
    )
    run = WorkflowRun(spec)
    history = [started]
    activation = run.feed([started])
    last = activation.commands
    for raw in scenario["inputs"]:
        history.extend(last)
        run.feed(last)
        event = HistoryEvent.from_json(raw)
        history.append(event)
        last = run.feed([event]).commands
    if not scenario.get("cut_last_commands"):
        history.extend(last)
    replays = scenario["replays"]
    return {
        "about": scenario["about"],
        "recorded_with": scenario["workflow"],
        "history": events_to_json(history),
        "replays": replays,
    }


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def fixtures() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


def cases() -> list[tuple[Path, str]]:
    return [(path, code) for path in fixtures() for code in load(path)["replays"]]


def test_every_scenario_has_its_golden_file() -> None:
    assert sorted(p.stem for p in fixtures()) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_recording_again_gives_the_same_history(name: str) -> None:
    assert record(name) == load(GOLDEN / f"{name}.json")


def check(activation: Activation, expect: dict[str, Any]) -> None:
    assert activation.status == expect["status"]
    commands = [[c.type, c.name] for c in activation.commands]
    assert commands == expect["commands"]
    if "result" in expect:
        assert activation.result == expect["result"]
    if "waiting_on" in expect:
        assert list(activation.waiting_on) == expect["waiting_on"]
    if "query" in expect:
        assert activation.query == expect["query"]


@pytest.mark.parametrize(("path", "code"), cases(), ids=lambda v: getattr(v, "stem", v))
def test_replaying_the_history_against_the_code(path: Path, code: str) -> None:
    fixture = load(path)
    history = events_from_json(fixture["history"])
    expect = fixture["replays"][code]
    workflow = getattr(flows, code)
    if "divergence" in expect:
        with pytest.raises(Divergence) as caught:
            replay(workflow, history)
        error = caught.value
        assert expect["divergence"] in str(error)
        assert error.index == expect["index"]
        assert error.workflow == workflow.__tickwheel_workflow__.name
        assert error.workflow_id == history[0].data["workflow_id"]
        assert f"history event {expect['index']}" in str(error)
        return
    check(replay(workflow, history), expect)


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_fed_one_event_at_a_time_it_ends_the_same_as_replayed_whole(path: Path) -> None:
    """A live instance in a worker's cache is fed its history piece by piece; a worker that
    misses the cache replays it whole. Both must reach the same state."""
    fixture = load(path)
    history = events_from_json(fixture["history"])
    workflow = getattr(flows, fixture["recorded_with"])
    whole = replay(workflow, history)
    run = WorkflowRun(workflow)
    commands: list[HistoryEvent] = []
    for event in history:
        commands.extend(run.feed([event]).commands)
    last = run.feed([])
    assert (last.status, last.result, last.error) == (whole.status, whole.result, whole.error)
    # Each command was new when its input arrived, and is what the history recorded next.
    recorded = [e for e in history if e.is_command]
    assert [c.to_json() for c in commands] == [e.to_json() for e in [*recorded, *whole.commands]]


def test_the_saga_compensates_in_exact_reverse_order() -> None:
    for name in ("saga_failure_compensates_in_reverse", "cancel_compensates"):
        history = events_from_json(load(GOLDEN / f"{name}.json")["history"])
        registered = [e.name for e in history if e.type == "rollback_registered"]
        compensated = [
            e.name for e in history if e.type == "step_scheduled" and e.data["compensation"]
        ]
        assert registered == ["release_authorization", "release_inventory"]
        assert compensated == list(reversed(registered)), name
        by = {e.name: e.data["registered_by"] for e in history if e.type == "rollback_registered"}
        assert by == {
            "release_authorization": "authorize#1",
            "release_inventory": "reserve_inventory#1",
        }


def test_a_buffered_signal_is_taken_without_waiting() -> None:
    history = events_from_json(load(GOLDEN / "signal_before_wait_is_buffered.json")["history"])
    assert not [e for e in history if e.type == "signal_wait_started"]
    end = history[-1]
    assert end.type == "workflow_completed"
    assert end.data["result"]["decision"] == {"ok": True}


def test_a_timed_out_wait_returns_none_and_a_duplicate_signal_counts_once() -> None:
    timed_out = events_from_json(load(GOLDEN / "signal_timeout.json")["history"])
    assert timed_out[-1].data["result"]["decision"] is None
    twice = events_from_json(load(GOLDEN / "duplicate_signal_id.json")["history"])
    assert twice[-1].data["result"] == ["x", "y"]


def test_recorded_side_effects_are_handed_back_not_drawn_again() -> None:
    history = events_from_json(load(GOLDEN / "sleep_then_signal.json")["history"])
    effects = {e.name: e.data["value"] for e in history if e.type == "side_effect_recorded"}
    result = history[-1].data["result"]
    assert result["draw"] == effects["random"]
    assert result["token"] == effects["uuid4"]
    assert effects["now"] == T0
    # Another value in the history is what a replay hands back.
    edited = [
        HistoryEvent(e.type, e.at_ms, e.position, e.name, {"value": 0.25})
        if e.type == "side_effect_recorded" and e.name == "random"
        else e
        for e in history[:-1]
    ]
    assert replay(flows.approval, edited).commands[-1].data["result"]["draw"] == 0.25


def dumps(fixture: dict[str, Any]) -> str:
    """The fixture as JSON a reviewer can read: one history event per line."""
    events = ",\n    ".join(json.dumps(e) for e in fixture["history"])
    head = {k: v for k, v in fixture.items() if k not in ("history", "replays")}
    lines = [f'  "{k}": {json.dumps(v)},' for k, v in head.items()]
    return (
        "{\n"
        + "\n".join(lines)
        + f'\n  "history": [\n    {events}\n  ],\n  "replays": '
        + json.dumps(fixture["replays"], indent=2).replace("\n", "\n  ")
        + "\n}\n"
    )


def main() -> None:
    if "--record" not in sys.argv:
        raise SystemExit("usage: python -m tests.unit.core.codeflow.test_codeflow_golden --record")
    GOLDEN.mkdir(exist_ok=True)
    for name in SCENARIOS:
        (GOLDEN / f"{name}.json").write_text(dumps(record(name)))
        print(f"recorded {name}")


if __name__ == "__main__":
    main()
