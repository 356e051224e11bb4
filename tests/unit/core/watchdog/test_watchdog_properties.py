"""Properties of the watchdog evaluator: the same log gives the same alerts however it was
delivered, and healthy jobs across DST transition days raise nothing."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tests.unit.core.watchdog.test_watchdog_golden import (
    T0,
    Observed,
    S,
    batched,
    definition,
    event,
    healthy_log,
    request,
    run,
)
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.core.watchdog import Thresholds
from tickwheel.core.watchdog.jobs import largest_gap_ms

THRESHOLDS = Thresholds(resolve_after_ms=3 * S, update_every_ms=5 * S,
                        oldest_ready_age_ms=5 * S, dead_letter_age_ms=8 * S)  # fmt: skip
OUTCOMES = ("ok", "missing", "not_leased", "running", "retrying", "dead", "late")


def slot_log(job_id: str, slot: int, outcome: str) -> list[Observed]:
    fire = slot + 10
    steps: dict[str, list[Observed]] = {
        "ok": [request(job_id, slot, fire), event(job_id, slot, "leased", fire + 50),
               event(job_id, slot, "succeeded", fire + 400)],
        "missing": [],
        "not_leased": [request(job_id, slot, fire)],
        "running": [request(job_id, slot, fire), event(job_id, slot, "leased", fire + 50),
                    event(job_id, slot, "heartbeat", fire + 900)],
        "retrying": [request(job_id, slot, fire), event(job_id, slot, "leased", fire + 50),
                     event(job_id, slot, "failed", fire + 300),
                     event(job_id, slot, "retry_scheduled", fire + 310)],
        "dead": [request(job_id, slot, fire), event(job_id, slot, "leased", fire + 50),
                 event(job_id, slot, "failed", fire + 300),
                 event(job_id, slot, "dead_lettered", fire + 310),
                 Observed("dead_letter", job_id, {"event_time": fire + 320, "job_id": job_id,
                          "execution_id": request(job_id, slot, 0).record["execution_id"],  # type: ignore[index]
                          "attempt": 1})],
        "late": [request(job_id, slot, fire + 7 * S), event(job_id, slot, "leased", fire + 7 * S),
                 event(job_id, slot, "succeeded", fire + 8 * S)],
    }  # fmt: skip
    return steps[outcome]


histories = st.lists(
    st.lists(st.sampled_from(OUTCOMES), min_size=5, max_size=25), min_size=1, max_size=3
)


@PROPS
@given(histories=histories, seed=st.integers(0, 2**32 - 1))
def test_duplicated_or_reordered_inputs_within_the_watermark_give_identical_transitions(
    histories: list[list[str]], seed: int
) -> None:
    log: list[Observed] = []
    for n, outcomes in enumerate(histories):
        job_id = f"job-{n}"
        log.append(definition(job_id, created=T0 - 500))
        for i, outcome in enumerate(outcomes):
            log.extend(slot_log(job_id, T0 + 2 * S * (i + 1), outcome))
    end = T0 + 2 * S * 30
    reference = batched(log, T0 - S, end, S)
    rng = random.Random(seed)
    shuffled = []
    for watermark, batch in reference:
        copy = batch + [rng.choice(batch) for _ in range(len(batch) // 2)] if batch else []
        rng.shuffle(copy)
        shuffled.append((watermark, copy))
    expected = [t.record() for t in run(reference, THRESHOLDS)]
    assert [t.record() for t in run(shuffled, THRESHOLDS)] == expected
    # ...and a replay of the whole log, delivered twice over, decides the same again.
    twice = [(w, b + b) for w, b in reference]
    assert [t.record() for t in run(twice, THRESHOLDS)] == expected


DST_DAYS = ("2024-03-10", "2024-03-31", "2024-04-07", "2024-10-06", "2024-10-27", "2024-11-03")
ZONES = ("America/New_York", "Europe/Berlin", "Europe/London", "Australia/Sydney",
         "Australia/Lord_Howe", "America/Santiago")  # fmt: skip
CRONS = ("30 2 * * *", "0 * * * *", "*/20 1-3 * * *", "15 0-4 * * 0", "0 0 * * *", "45 1 * * 1-5")


@PROPS
@given(
    day=st.sampled_from(DST_DAYS),
    zone=st.sampled_from(ZONES),
    cron=st.sampled_from(CRONS),
    declared=st.booleans(),
    default_jitter=st.booleans(),
)
def test_healthy_jobs_across_dst_transition_days_raise_nothing(
    day: str, zone: str, cron: str, declared: bool, default_jitter: bool
) -> None:
    start = parse_iso_ms(f"{day}T00:00:00Z", "day") - 3 * 86_400_000
    end = start + 6 * 86_400_000
    compiled = compile_schedule(parse_schedule(cron=cron, timezone=zone))
    # A declared interval as an author would write it: the largest gap plus two hours' slack.
    gap = largest_gap_ms(compiled, start)
    assert gap is not None
    emi = f"{(gap + 2 * 3_600_000) // S}s"
    defn = definition("dst", cron, created=start, timezone=zone,
                      emi=emi if declared else None, jitter=None if default_jitter else "0s")  # fmt: skip
    assert defn.record is not None
    from tickwheel.core.watchdog import job_spec

    spec = job_spec("dst", defn.record)
    assert spec is not None
    log = [defn, *healthy_log("dst", compiled, start, end, spec.jitter_ms)]
    assert run(batched(log, start, end, 600 * S), THRESHOLDS) == []
