"""Golden replay of the restore path, the way Temporal replays recorded histories: each fixture
in tests/unit/services/timer/golden/ holds what a partition's topics held (definitions, timer states, the
request-topic tail with each request's transaction number) and the emission a restore at `now`
must produce. A change that alters what a restore emits fails here until the fixture is
re-recorded on purpose: `python -m tests.unit.services.timer.test_restore_golden --record` (then review the diff).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from tickwheel.services.timer.scheduler import PartitionTimer

GOLDEN = Path(__file__).parent / "golden"


def restore(fixture: dict[str, Any]) -> dict[str, Any]:
    """Feed the fixture's topics through a restore; the emission in a comparable form."""
    now = fixture["now"]
    timer = PartitionTimer(0, 3_600_000, 10, now, 10_000, rng=random.Random(0),
                           misfire_grace_ms=60_000)  # fmt: skip
    for job_id, state in fixture["states"]:
        timer.load_state(job_id, state)
    for job_id, record in fixture["definitions"]:
        timer.load_definition(job_id, record)
    replayed = [job_id for request, seq in fixture["requests"]
                if timer.load_request(request, seq) for job_id in [request["job_id"]]]  # fmt: skip
    emission = timer.finish_restore(now)
    return {
        "replayed": replayed,
        "requests": sorted(
            [r["job_id"], r["scheduled_time"], r["trigger"], r["attempt"], r["execution_id"]]
            for r in emission.requests
        ),
        "events": sorted(
            [e["job_id"], e["event_type"], e["scheduled_time"], e["reason"]]
            for e in emission.events
        ),
        "states": {
            job_id: None
            if state is None
            else {
                "last_scheduled_time": state["last_scheduled_time"],
                "pending": sorted(
                    [p["execution_id"] or p["timer_id"], p["kind"], p["attempt"]]
                    for p in state["pending"]
                ),
            }
            for job_id, state in sorted(emission.states.items())
        },
        "dead_letters": sorted(d["dead_letter_id"] for d in emission.dead_letters),
        "in_flight": sorted(
            [f.request["job_id"], execution_id, f.state, f.attempt, f.deadline_ms]
            for execution_id, f in timer.executions.in_flight.items()
        ),
        "wheel": sorted(
            [job_id, job.next_ms] for job_id, job in timer.jobs.items() if job.next_ms is not None
        ),
    }


def fixtures() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.stem)
def test_a_restore_emits_what_was_recorded(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert restore(fixture) == fixture["expected"], f"{path.name}: {fixture['about']}"


def test_there_are_golden_fixtures() -> None:
    assert len(fixtures()) >= 4


if __name__ == "__main__" and "--record" in sys.argv:
    for path in fixtures():
        fixture = json.loads(path.read_text())
        fixture["expected"] = restore(fixture)
        path.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
        print(f"recorded {path.name}")
