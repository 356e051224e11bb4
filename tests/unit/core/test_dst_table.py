"""The DST policy as a table: spring-forward and fall-back days in several zones.

Each row is (zone, cron, dstPolicy, start, expected occurrences after start) and is
compared by the *printed local time with its offset*, so an occurrence at the wrong
side of a fold (right wall clock, wrong offset) fails visibly. The expected strings were
worked out by hand from the policy in docs/decisions/0010 and the zones' 2024 rules:

* America/New_York: 2024-03-10 02:00 EST -> 03:00 EDT; 2024-11-03 02:00 EDT -> 01:00 EST.
* Europe/London: 2024-03-31 01:00 GMT -> 02:00 BST; 2024-10-27 02:00 BST -> 01:00 GMT.
* Australia/Lord_Howe (30-minute shift): 2024-10-06 02:00 -> 02:30 (+10:30 -> +11:00);
  2024-04-07 02:00 -> 01:30 (+11:00 -> +10:30).
* Australia/Sydney: 2024-10-06 02:00 -> 03:00 (+10 -> +11); 2024-04-07 03:00 -> 02:00.
* America/Santiago (transitions at midnight): 2024-09-08 00:00 -> 01:00 (-04 -> -03);
  2024-04-07 00:00 -> 2024-04-06 23:00 (-03 -> -04).
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.core.timefmt import format_local, parse_iso_ms

NY, LON, LHI, SYD, SCL = (
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Santiago",
)

CASES: list[tuple[str, str, str | None, str, list[str]]] = [
    # --- America/New_York, spring forward --------------------------------------------------
    # daily at a time inside the gap: once, at the first valid instant after it (03:00 EDT)
    (NY, "30 2 * * *", None, "2024-03-09T00:00:00-05:00",
     ["2024-03-09T02:30:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"]),
    # two walls inside the gap and one at its end all collapse into one occurrence
    (NY, "0,30 2,3 * * *", None, "2024-03-10T00:00:00-05:00",
     ["2024-03-10T03:00:00-04:00", "2024-03-10T03:30:00-04:00", "2024-03-11T02:00:00-04:00"]),
    # hourly follows the real timeline: the skipped hour has none
    (NY, "30 * * * *", None, "2024-03-10T00:00:00-05:00",
     ["2024-03-10T00:30:00-05:00", "2024-03-10T01:30:00-05:00", "2024-03-10T03:30:00-04:00",
      "2024-03-10T04:30:00-04:00"]),
    (NY, "*/15 * * * *", None, "2024-03-10T01:20:00-05:00",
     ["2024-03-10T01:30:00-05:00", "2024-03-10T01:45:00-05:00", "2024-03-10T03:00:00-04:00",
      "2024-03-10T03:15:00-04:00"]),
    # seconds, hour `*`: real timeline across the jump
    (NY, "*/30 * * * * *", None, "2024-03-10T01:59:00-05:00",
     ["2024-03-10T01:59:30-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T03:00:30-04:00"]),
    # seconds at a fixed hour inside the gap: shifted to the gap's end
    (NY, "30 30 2 * * *", None, "2024-03-09T12:00:00-05:00",
     ["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:30-04:00"]),
    # alternative: skip the non-existent time
    (NY, "30 2 * * *", "skip_earlier", "2024-03-09T00:00:00-05:00",
     ["2024-03-09T02:30:00-05:00", "2024-03-11T02:30:00-04:00"]),
    # --- America/New_York, fall back -----------------------------------------------------
    # the seed's rule: a daily 01:30 runs once, at the earlier offset (EDT)
    (NY, "30 1 * * *", None, "2024-11-02T00:00:00-04:00",
     ["2024-11-02T01:30:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]),
    (NY, "30 2 * * *", None, "2024-11-02T12:00:00-04:00",
     ["2024-11-03T02:30:00-05:00", "2024-11-04T02:30:00-05:00"]),
    (NY, "30 1 * * *", "shift_later", "2024-11-02T12:00:00-04:00",
     ["2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"]),
    (NY, "30 1 * * *", "timeline", "2024-11-02T12:00:00-04:00",
     ["2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"]),
    # hourly: the repeated hour fires again
    (NY, "30 * * * *", None, "2024-11-03T00:00:00-04:00",
     ["2024-11-03T00:30:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00",
      "2024-11-03T02:30:00-05:00"]),
    (NY, "*/15 * * * *", None, "2024-11-03T01:40:00-04:00",
     ["2024-11-03T01:45:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T01:15:00-05:00"]),
    (NY, "*/30 * * * * *", None, "2024-11-03T01:59:15-04:00",
     ["2024-11-03T01:59:30-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T01:00:30-05:00"]),
    # hourly schedule forced onto fixed-time rules: the repeated hour fires once
    (NY, "30 * * * *", "fixed", "2024-11-03T00:00:00-04:00",
     ["2024-11-03T00:30:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-03T02:30:00-05:00"]),
    # --- Europe/London ---------------------------------------------------------------------
    (LON, "30 1 * * *", None, "2024-03-30T00:00:00+00:00",
     ["2024-03-30T01:30:00+00:00", "2024-03-31T02:00:00+01:00", "2024-04-01T01:30:00+01:00"]),
    (LON, "0 * * * *", None, "2024-03-30T23:30:00+00:00",
     ["2024-03-31T00:00:00+00:00", "2024-03-31T02:00:00+01:00", "2024-03-31T03:00:00+01:00"]),
    (LON, "30 1 * * *", None, "2024-10-26T12:00:00+01:00",
     ["2024-10-27T01:30:00+01:00", "2024-10-28T01:30:00+00:00"]),
    (LON, "0 * * * *", None, "2024-10-26T23:30:00+01:00",
     ["2024-10-27T00:00:00+01:00", "2024-10-27T01:00:00+01:00", "2024-10-27T01:00:00+00:00",
      "2024-10-27T02:00:00+00:00"]),
    (LON, "30 1 * * *", "shift_both", "2024-10-26T12:00:00+01:00",
     ["2024-10-27T01:30:00+01:00", "2024-10-27T01:30:00+00:00", "2024-10-28T01:30:00+00:00"]),
    # --- Australia/Lord_Howe: 30-minute shifts --------------------------------------------
    (LHI, "15 2 * * *", None, "2024-10-05T12:00:00+10:30",
     ["2024-10-06T02:30:00+11:00", "2024-10-07T02:15:00+11:00"]),
    (LHI, "0 * * * *", None, "2024-10-06T00:30:00+10:30",
     ["2024-10-06T01:00:00+10:30", "2024-10-06T03:00:00+11:00"]),
    (LHI, "30 * * * *", None, "2024-10-06T00:45:00+10:30",
     ["2024-10-06T01:30:00+10:30", "2024-10-06T02:30:00+11:00", "2024-10-06T03:30:00+11:00"]),
    (LHI, "*/15 * * * *", None, "2024-10-06T01:40:00+10:30",
     ["2024-10-06T01:45:00+10:30", "2024-10-06T02:30:00+11:00", "2024-10-06T02:45:00+11:00"]),
    (LHI, "45 1 * * *", None, "2024-04-06T12:00:00+11:00",
     ["2024-04-07T01:45:00+11:00", "2024-04-08T01:45:00+10:30"]),
    (LHI, "*/15 * * * *", None, "2024-04-07T01:20:00+11:00",
     ["2024-04-07T01:30:00+11:00", "2024-04-07T01:45:00+11:00", "2024-04-07T01:30:00+10:30",
      "2024-04-07T01:45:00+10:30", "2024-04-07T02:00:00+10:30"]),
    (LHI, "0 */20 1 * * *", None, "2024-04-07T01:30:00+11:00",
     ["2024-04-07T01:40:00+11:00", "2024-04-08T01:00:00+10:30"]),
    # --- Australia/Sydney (southern hemisphere) --------------------------------------------
    (SYD, "30 2 * * *", None, "2024-10-05T12:00:00+10:00",
     ["2024-10-06T03:00:00+11:00", "2024-10-07T02:30:00+11:00"]),
    (SYD, "30 2 * * *", None, "2024-04-06T12:00:00+11:00",
     ["2024-04-07T02:30:00+11:00", "2024-04-08T02:30:00+10:00"]),
    (SYD, "0 * * * *", None, "2024-04-07T01:30:00+11:00",
     ["2024-04-07T02:00:00+11:00", "2024-04-07T02:00:00+10:00", "2024-04-07T03:00:00+10:00"]),
    # --- America/Santiago: transitions at local midnight -----------------------------------
    (SCL, "0 0 * * *", None, "2024-09-06T12:00:00-04:00",
     ["2024-09-07T00:00:00-04:00", "2024-09-08T01:00:00-03:00", "2024-09-09T00:00:00-03:00"]),
    (SCL, "30 23 * * *", None, "2024-04-06T12:00:00-03:00",
     ["2024-04-06T23:30:00-03:00", "2024-04-07T23:30:00-04:00"]),
    (SCL, "30 * * * *", None, "2024-04-06T22:00:00-03:00",
     ["2024-04-06T22:30:00-03:00", "2024-04-06T23:30:00-03:00", "2024-04-06T23:30:00-04:00",
      "2024-04-07T00:30:00-04:00"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("zone", "cron", "policy", "start", "expected"),
    CASES,
    ids=[f"{c[0]}|{c[1]}|{c[2] or 'auto'}|{c[3]}" for c in CASES],
)
def test_dst_policy_table(
    zone: str, cron: str, policy: str | None, start: str, expected: list[str]
) -> None:
    compiled = compile_schedule(parse_schedule(cron=cron, timezone=zone, dst_policy=policy))
    tz = ZoneInfo(zone)
    t = parse_iso_ms(start, "start")
    printed = []
    for _ in expected:
        nxt = compiled.next_after(t)
        assert nxt is not None
        printed.append(format_local(nxt, tz))
        t = nxt
    assert printed == expected
    # The range API agrees with the step-by-step one, and counts the same.
    start_ms, end_ms = parse_iso_ms(start, "start"), t
    in_range = compiled.occurrences(start_ms, end_ms)
    assert [format_local(ms, tz) for ms in in_range] == expected
    assert compiled.count(start_ms, end_ms) == len(expected)
