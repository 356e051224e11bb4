"""The console's SVG drawings, read back as XML: the occurrence grid draws a missing slot as a
missing cell, the timeline draws every attempt, and the DAG lays out a 200-step workflow with
every edge going right and no two boxes on one spot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tickwheel.history import build_timeline
from tickwheel.services.api.console.svg import (
    PROBLEM_MIN_WIDTH,
    CyclicWorkflow,
    DagStep,
    Slot,
    dag,
    dag_layout,
    execution_timeline,
    occurrence_grid,
)

NS = "{http://www.w3.org/2000/svg}"
MINUTE = 60_000
DAY = 86_400_000
START = 1_798_761_600_000  # 2027-01-01T00:00:00Z


def rects(svg: str) -> list[ET.Element]:
    return [r for r in ET.fromstring(svg).iter(f"{NS}rect") if "slot" in r.get("class", "")]


def test_a_slot_with_no_requested_event_is_drawn_as_a_missing_cell() -> None:
    slots = [Slot(START + i * MINUTE, "fired", f"e{i}") for i in range(10)]
    slots[4] = Slot(START + 4 * MINUTE, "missing")
    cells = rects(occurrence_grid(slots))
    missing = [r for r in cells if r.get("data-status") == "missing"]
    assert len(missing) == 1
    assert missing[0].get("data-slot") == "2027-01-01T00:04:00+00:00"
    assert float(missing[0].get("width", "0")) >= PROBLEM_MIN_WIDTH
    assert missing[0].findtext(f"{NS}title", "").startswith("missing: 2027-01-01 00:04")
    # The fired slots either side stay two runs: the missing one is not merged away.
    fired = [r for r in cells if r.get("data-status") == "fired"]
    assert sorted(int(r.get("data-count", "0")) for r in fired) == [4, 5]


def test_a_per_minute_job_over_30_days_is_one_row_a_day_and_few_shapes() -> None:
    slots = [Slot(START + i * MINUTE, "fired") for i in range(30 * 1440)]
    missing_at = {START + 17 * DAY + 125 * MINUTE, START + 29 * DAY + 1439 * MINUTE}
    slots = [Slot(s.at_ms, "missing") if s.at_ms in missing_at else s for s in slots]
    svg = occurrence_grid(slots)
    root = ET.fromstring(svg)
    assert len([t for t in root.iter(f"{NS}text") if t.get("class") == "day"]) == 30
    cells = rects(svg)
    assert sum(int(r.get("data-count", "0")) for r in cells) == 30 * 1440
    assert {r.get("data-slot") for r in cells if r.get("data-status") == "missing"} == {
        "2027-01-18T02:05:00+00:00",
        "2027-01-30T23:59:00+00:00",
    }
    assert len(cells) < 100  # runs, not 43,200 rectangles


def test_the_grid_rows_are_local_days_of_the_jobs_zone() -> None:
    # 23:30 UTC on 1 January is 00:30 on 2 January in Berlin.
    svg = occurrence_grid([Slot(START + 23 * 3_600_000 + 30 * MINUTE, "fired")], "Europe/Berlin")
    days = [t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("class") == "day"]
    assert days == ["2027-01-02"]


def _event(kind: str, at: str, attempt: int, **extra: object) -> dict[str, object]:
    import datetime as dt

    return {
        "event_id": f"{kind}-{attempt}-{at}", "event_type": kind, "attempt": attempt,
        "event_time": dt.datetime.fromisoformat(at), "scheduled_time": None, "job_id": "j",
        "job_type": "fail", "fire_time": None, "worker_id": extra.get("worker_id"),
        "lease_deadline": None, "error_kind": None, "error": extra.get("error"),
        "reason": extra.get("reason"), "details": None,
    }  # fmt: skip


def test_the_timeline_draws_one_lane_per_attempt_with_its_outcome_as_text() -> None:
    events = [
        _event("requested", "2027-01-01T00:00:00+00:00", 1, reason="scheduled"),
        _event("leased", "2027-01-01T00:00:01+00:00", 1, worker_id="w1"),
        _event("heartbeat", "2027-01-01T00:00:02+00:00", 1, worker_id="w1"),
        _event("failed", "2027-01-01T00:00:03+00:00", 1, worker_id="w1", error="boom"),
        _event("requested", "2027-01-01T00:00:05+00:00", 2, reason="retry"),
        _event("leased", "2027-01-01T00:00:06+00:00", 2, worker_id="w2"),
        _event("succeeded", "2027-01-01T00:00:07+00:00", 2, worker_id="w2"),
    ]
    timeline = build_timeline("e1", events)
    root = ET.fromstring(execution_timeline(timeline))
    lanes = [g for g in root.iter(f"{NS}g") if g.get("class") == "attempt"]
    assert [g.get("data-attempt") for g in lanes] == ["1", "2"]
    outcomes = [t.text for g in lanes for t in g.iter(f"{NS}text") if t.get("class") == "outcome"]
    assert outcomes == ["failed", "succeeded"]
    assert len([ln for ln in root.iter(f"{NS}line") if ln.get("class") == "heartbeat"]) == 1


def test_a_200_step_workflow_is_laid_out_in_layers_with_every_edge_going_right() -> None:
    # A wide, deep DAG: 20 layers of 10 steps, each waiting for two steps of the layer before.
    steps = []
    for layer in range(20):
        for i in range(10):
            deps = () if layer == 0 else (f"s{layer - 1}-{i}", f"s{layer - 1}-{(i + 3) % 10}")
            steps.append(DagStep(f"s{layer}-{i}", deps, "succeeded" if layer < 5 else "pending"))
    placed = dag_layout(steps)
    assert len(placed) == 200
    at = {p.step.step_id: p for p in placed}
    assert len({(p.x, p.y) for p in placed}) == 200  # no two boxes on one spot
    assert all(at[d].layer < p.layer for p in placed for d in p.step.depends_on)
    assert max(p.layer for p in placed) == 19
    root = ET.fromstring(dag(steps))
    boxes = [g for g in root.iter(f"{NS}g") if g.get("data-step")]
    assert len(boxes) == 200
    assert {g.get("data-state") for g in boxes} == {"succeeded", "pending"}
    assert len([ln for ln in root.iter(f"{NS}line") if ln.get("class") == "edge"]) == 380


def test_a_cycle_or_an_unknown_dependency_is_refused() -> None:
    with pytest.raises(CyclicWorkflow, match="cycle"):
        dag_layout([DagStep("a", ("b",)), DagStep("b", ("a",))])
    with pytest.raises(CyclicWorkflow, match="unknown"):
        dag_layout([DagStep("a", ("nope",))])
