"""Properties of the evaluator's newer rules (bounded jobs, run lengths, disables, acks):
the same log gives the same transitions however it is duplicated or reordered within the
watermark, and a bounded job that ran every slot to its end raises nothing."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.core._settings import PROPS
from tests.unit.core.watchdog.test_watchdog_ack import ack
from tests.unit.core.watchdog.test_watchdog_golden import T0, S, batched, event, request, run
from tests.unit.core.watchdog.test_watchdog_rules import bounded, disable, healthy_slots
from tickwheel.core.watchdog import Observed, Thresholds, fingerprint

THRESHOLDS = Thresholds(resolve_after_ms=2 * S, update_every_ms=5 * S, run_grace_ms=S)
# Run lengths in ms of each slot's run; None: leased and never finished.
runs = st.lists(st.one_of(st.none(), st.integers(0, 5_000)), min_size=3, max_size=15)


def job_log(n: int, lengths: list[int | None], review_s: int | None) -> list[Observed]:
    job_id = f"job-{n}"
    log: list[Observed] = [bounded(job_id, maxRunTime="3s", minRunTime="1s",
                                   expectedMaxInterval="1h", created=T0 - 500)]  # fmt: skip
    for i, length in enumerate(lengths):
        slot = T0 + 2 * S * (i + 1)
        log += [request(job_id, slot, slot + 5), event(job_id, slot, "leased", slot + 20)]
        if length is not None:
            log.append(event(job_id, slot, "succeeded", slot + 20 + length))
    if review_s is not None:
        log.append(disable(job_id, 2, T0 + 2 * S * len(lengths) + S, T0 + review_s * S))
    return log


@PROPS
@given(
    jobs=st.lists(st.tuples(runs, st.one_of(st.none(), st.integers(5, 60))), min_size=1,
                  max_size=3),
    acked=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_new_rules_decide_the_same_under_duplicates_and_reordering(
    jobs: list[tuple[list[int | None], int | None]], acked: bool, seed: int
) -> None:
    log: list[Observed] = []
    for n, (lengths, review_s) in enumerate(jobs):
        log += job_log(n, lengths, review_s)
    if acked:  # an acknowledgement of the first job's too-short incident, if it opens
        log.append(ack(f"{fingerprint('run_too_short', 'job-0')}-1", T0 + 20 * S))
    end = T0 + 70 * S
    reference = batched(log, T0 - S, end, S)
    rng = random.Random(seed)
    shuffled = []
    for watermark, batch in reference:
        copy = batch + [rng.choice(batch) for _ in range(len(batch) // 2)] if batch else []
        rng.shuffle(copy)
        shuffled.append((watermark, copy))
    expected = [t.record() for t in run(reference, THRESHOLDS)]
    assert [t.record() for t in run(shuffled, THRESHOLDS)] == expected
    assert [t.record() for t in run([(w, b + b) for w, b in reference], THRESHOLDS)] == expected


@PROPS
@given(
    slots=st.integers(1, 12),
    bound=st.sampled_from(("endAt", "maxRuns")),
    tail_s=st.integers(0, 600),
)
def test_a_bounded_job_that_ran_every_slot_to_its_end_raises_nothing(
    slots: int, bound: str, tail_s: int
) -> None:
    every = [T0 + 2 * S * (i + 1) for i in range(slots)]
    fields: dict[str, Any] = {"endAt": every[-1]} if bound == "endAt" else {"maxRuns": slots}
    log = [bounded("b", **fields), *healthy_slots("b", every)]
    assert run(batched(log, T0 - S, every[-1] + tail_s * S, S), THRESHOLDS) == []
