"""The watchdog service's pure parts: its event-time watermark, its state records, and the
SDK's fold of transitions into incidents (`tickwheel.sdk.alerts`, no broker)."""

from __future__ import annotations

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, T0, S, definition, run
from tickwheel.adapters.avro import decode, encode
from tickwheel.core.watchdog import Incident
from tickwheel.sdk.alerts import incidents
from tickwheel.services.watchdog.progress import watermark
from tickwheel.services.watchdog.records import (
    checkpoint_record,
    incident_record,
    parse_state_record,
)


def test_a_caught_up_partition_stands_at_the_clock_and_one_behind_at_its_newest_record() -> None:
    ends = {"a:0": 10, "b:0": 5}
    assert watermark({"a:0": 10, "b:0": 5}, ends, {}, 1_000_000, 2_000) == 998_000
    assert watermark({"a:0": 10, "b:0": 3}, ends, {"b:0": 400_000}, 1_000_000, 2_000) == 398_000
    # Behind, and nothing read from it yet: no watermark (no evaluation) rather than a guess.
    assert watermark({"a:0": 10, "b:0": 0}, ends, {}, 1_000_000, 2_000) is None
    assert watermark({}, {"e:0": 0}, {}, 1_000_000, 0) == 1_000_000  # an empty partition


def test_incidents_and_the_checkpoint_round_trip_through_the_alert_schema() -> None:
    [opened] = run([(T0 + 7 * S, [definition("j")])], QUICK)
    incident = opened.incident
    raw = encode("Alert", incident_record(incident))
    back = parse_state_record(decode(raw, "Alert")[1])
    assert isinstance(back, Incident) and back == incident
    raw = encode("Alert", checkpoint_record({"t:0": 12}, T0, T0 + S))
    assert parse_state_record(decode(raw, "Alert")[1]) == ({"t:0": 12}, T0)
    assert decode(encode("Alert", opened.record()), "Alert")[1]["alert_id"].endswith(":1")


def test_the_cli_folds_transitions_per_incident_and_counts_a_redelivery_once() -> None:
    import json

    got = run([(T0 + 7 * S, [definition("j")]), (T0 + 8 * S, [definition("j", version=2,
              enabled=False, updated=T0 + 8 * S)])], QUICK)  # fmt: skip
    records = []
    for t in got:
        alert = t.record()
        details = json.loads(alert["details"])
        records.append({**alert, **details, "details": details["evidence"]})
    [incident] = incidents(records + records)
    assert incident["state"] == "resolved"
    assert [t["transition"] for t in incident["transitions"]] == ["opened", "resolved"]


def test_the_watchdog_lags_only_when_behind_for_as_long_as_its_threshold() -> None:
    from tickwheel.core.watchdog import WatchdogState, evaluate
    from tickwheel.services.watchdog.progress import LagWatch

    watch = LagWatch(threshold_ms=60_000)
    # Back from two minutes down: far behind at first, caught up within seconds. Nothing.
    start = T0
    assert watch.observe(start, start - 120_000) is None
    assert watch.observe(start + 3_000, start + 1_000) is None
    assert watch.behind_since is None
    # Stuck behind for a minute of running time: the condition, through the lifecycle.
    state = WatchdogState()
    got = []
    for second in range(0, 70):
        now = start + 10_000 + second * S
        lagging = watch.observe(now, now - 90_000)
        got += evaluate(state, now - 90_000, QUICK, extra=[lagging] if lagging else [])[0]
    assert [(t.incident.kind, t.transition) for t in got] == [("watchdog_lagging", "opened")]
    assert got[0].at == start + 10_000 + 60 * S - 90_000
    resolved = evaluate(state, start + 80 * S, QUICK, extra=[])[0]
    assert [(t.incident.kind, t.transition) for t in resolved] == [("watchdog_lagging", "resolved")]
