"""The console's picture and rows of a workflow written as code: what its run issued, in
order, as a chain; a waiting signal offers its form, a sleep or wait shows its deadline, and
no code step offers a DAG's repair actions."""

from __future__ import annotations

from tickwheel.services.api.console.workflows import code_steps_shown


def test_a_code_run_is_shown_in_the_order_it_ran_with_its_waiting_signal_answerable() -> None:
    steps = {
        "charge#1": {"kind": "step", "status": "succeeded", "attempt": 1, "startedAt": 0},
        "sleep@2": {"kind": "sleep", "status": "succeeded", "startedAt": 10, "deadline": 20},
        "signal:approval@3": {
            "kind": "signal",
            "status": "waiting",
            "startedAt": 20,
            "deadline": 99,
            "name": "approval",
        },
    }
    dag, rows = code_steps_shown(steps, now_ms=50)
    assert [(d.step_id, d.depends_on) for d in dag] == [
        ("charge#1", ()),
        ("sleep@2", ("charge#1",)),
        ("signal:approval@3", ("sleep@2",)),
    ]
    assert [r["signal"] for r in rows] == [None, None, "approval"]
    assert all(r["code"] for r in rows) and rows[2]["deadline"] == 99
