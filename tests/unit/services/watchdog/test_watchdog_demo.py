"""`make run`'s overdue example: its definition is valid, and the watchdog's evaluator, given
the log its one run leaves (three failures, retries 2, 4 and 8 s apart, then a success),
opens one job_overdue incident and resolves it with `succeeded_late`."""

from __future__ import annotations

from tests.unit.core.watchdog.test_watchdog_golden import S, details, event, kinds, request, run
from tickwheel.core.watchdog import Observed, Thresholds
from tickwheel.demo import example_jobs
from tickwheel.sdk.jobs import validate_job

NOW = 1_800_000_001_000  # one second past a 5 s boundary


def test_the_demo_late_job_opens_and_resolves() -> None:
    [spec] = [j for j in example_jobs(NOW) if j["jobId"].startswith("demo-late-")]
    record = validate_job(spec, NOW)
    job_id = spec["jobId"]
    slot = NOW + 4 * S  # the next */5 s slot
    log: list[tuple[int, Observed]] = [(NOW, Observed("definition", job_id, record))]
    at = slot
    for attempt, delay in ((1, 0), (2, 2), (3, 4), (4, 8)):
        at += delay * S
        log += [(at, request(job_id, slot, at, attempt=attempt)),
                (at + 100, event(job_id, slot, "leased", at + 100, attempt=attempt))]  # fmt: skip
        outcome = "succeeded" if attempt == 4 else "failed"
        log.append((at + 200, event(job_id, slot, outcome, at + 200, attempt=attempt)))
    thresholds = Thresholds(resolve_after_ms=60 * S)  # the stack's default
    batches = [(NOW + s * S, [o for t, o in log if NOW + (s - 1) * S < t <= NOW + s * S])
               for s in range(0, 120)]  # fmt: skip
    got = run(batches, thresholds)
    # Opened at the deadline, escalated once overdue by another interval, then resolved.
    assert [t for _, _, t in kinds(got)] == ["opened", "updated", "resolved"]
    assert {subject for _, subject, _ in kinds(got)} == {job_id}
    assert got[0].at == NOW + 8 * S
    assert details(got[-1])["diagnosis"] == "succeeded_late"
