"""`output_stale`: a job's output is older than it may be, judged from the output itself.

A job may declare `freshness` — a Kafka topic whose newest record time is its output time,
with `warnAfter` and `errorAfter`. The watchdog reads that time itself (its freshness probe)
and passes it in: this holds whatever the scheduler believes, so a job that "succeeds"
without writing anything is caught. An output topic with no record at all counts from the
job's creation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.facts import Facts


def topics(facts: Facts) -> set[str]:
    """The output topics the enabled jobs declare: what the probe must read."""
    out = set()
    for job in facts.jobs.values():
        spec = job.spec
        if spec is not None and not job.deleted and spec.enabled and spec.freshness is not None:
            out.add(spec.freshness.topic)
    return out


def stale_outputs(
    facts: Facts, newest_ms: Mapping[str, int | None], now_ms: int
) -> Iterator[Condition]:
    """`newest_ms`: topic → its newest record's time (None: empty); a topic not in it has not
    been read yet and is judged on nothing."""
    for job_id in sorted(facts.jobs):
        job = facts.jobs[job_id]
        spec = job.spec
        if spec is None or job.deleted or not spec.enabled or spec.freshness is None:
            continue
        check = spec.freshness
        if check.topic not in newest_ms:
            continue
        newest = newest_ms[check.topic]
        since = newest if newest is not None else spec.created_at_ms
        age = now_ms - since
        if age < check.warn_after_ms:
            continue
        error = check.error_after_ms is not None and age >= check.error_after_ms
        yield Condition(
            "output_stale", job_id, "critical" if error else "warning",
            f"job {job_id}'s output on {check.topic} is {age // 1000} s old "
            f"({'no record yet' if newest is None else 'newest record'}; "
            f"warn after {check.warn_after_ms // 1000} s)",
            {"topic": check.topic, "newest_at": newest, "age_ms": age,
             "warn_after_ms": check.warn_after_ms, "error_after_ms": check.error_after_ms},
            summary="error" if error else "warn", job_id=job_id, tenant_id=spec.tenant_id,
        )  # fmt: skip
