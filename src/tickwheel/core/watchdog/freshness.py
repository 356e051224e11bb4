"""`output_stale`: a job's output is older than it may be, judged from the output itself.

A job may declare `freshness` — a Kafka topic whose newest record time is its output time,
or a ClickHouse SQL query returning it, with `warnAfter` and `errorAfter`. The watchdog
reads that time itself (its freshness probes)
and passes it in: this holds whatever the scheduler believes, so a job that "succeeds"
without writing anything is caught. An output topic with no record at all counts from the
job's creation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.facts import Facts
from tickwheel.core.watchdog.fields import Freshness


def topics(facts: Facts) -> set[str]:
    """The output topics the enabled jobs declare: what the Kafka probe must read."""
    return {c.topic for c in _checks(facts) if c.topic is not None}


def queries(facts: Facts) -> set[str]:
    """The freshness queries the enabled jobs declare: what the SQL probe must run."""
    return {c.sql for c in _checks(facts) if c.sql is not None}


def _checks(facts: Facts) -> Iterator[Freshness]:
    if not _any_declared(facts):
        return
    for job in facts.jobs.values():
        spec = job.spec
        if spec is not None and not job.deleted and spec.enabled and spec.freshness is not None:
            yield spec.freshness


def stale_outputs(
    facts: Facts, newest_ms: Mapping[str, int | None], now_ms: int
) -> Iterator[Condition]:
    """`newest_ms`: source (`Freshness.source`: the topic, or `sql:<query>`) → the newest
    output time (None: no output yet); a source not in it has not been read yet (or its query
    failed) and is judged on nothing."""
    if not _any_declared(facts):
        return
    for job_id in sorted(facts.jobs):
        job = facts.jobs[job_id]
        spec = job.spec
        if spec is None or job.deleted or not spec.enabled or spec.freshness is None:
            continue
        check = spec.freshness
        if check.source not in newest_ms:
            continue
        newest = newest_ms[check.source]
        since = newest if newest is not None else spec.created_at_ms
        age = now_ms - since
        if age < check.warn_after_ms:
            continue
        error = check.error_after_ms is not None and age >= check.error_after_ms
        where = f"on {check.topic}" if check.topic is not None else "by its freshness query"
        yield Condition(
            "output_stale",
            job_id,
            "critical" if error else "warning",
            f"job {job_id}'s output {where} is {age // 1000} s old "
            f"({'no output yet' if newest is None else 'newest output'}; "
            f"warn after {check.warn_after_ms // 1000} s)",
            {
                "topic": check.topic,
                "sql": check.sql,
                "newest_at": newest,
                "age_ms": age,
                "warn_after_ms": check.warn_after_ms,
                "error_after_ms": check.error_after_ms,
            },
            summary="error" if error else "warn",
            job_id=job_id,
            tenant_id=spec.tenant_id,
        )


def _any_declared(facts: Facts) -> bool:
    # The distinct profiles are few: most installations declare no freshness at all, and
    # then no tick walks every job for it.
    return any(p.freshness is not None for p in facts.jobs.profiles())


FAILED_KIND = "freshness_query_failed"
JOBS_SHOWN = 10


def failed_queries(facts: Facts, failing: Mapping[str, tuple[str, int]]) -> Iterator[Condition]:
    """`freshness_query_failed`, one per freshness query that did not answer with a time
    (refused by the read-only guard, stopped by a cap, an error, a value that is no time):
    `failing` maps the query to (the error, since when). Its jobs are judged on nothing
    meanwhile, so the failure is an alert of its own (decision 0135), with the error as
    evidence; it resolves once the query answers again."""
    if not failing:
        return
    users: dict[str, list[str]] = {}
    tenants: dict[str, set[str]] = {}
    for job_id in sorted(facts.jobs):
        job = facts.jobs[job_id]
        spec = job.spec
        check = spec.freshness if spec is not None else None
        if spec is None or job.deleted or not spec.enabled or check is None or check.sql is None:
            continue
        if check.sql in failing:
            users.setdefault(check.sql, []).append(job_id)
            tenants.setdefault(check.sql, set()).add(spec.tenant_id)
    for sql in sorted(users):
        error, since = failing[sql]
        jobs = users[sql]
        tenant = next(iter(tenants[sql])) if len(tenants[sql]) == 1 else None
        yield Condition(
            FAILED_KIND,
            query_subject(sql),
            "warning",
            f"the freshness query of {len(jobs)} job(s) ({jobs[0]}"
            f"{', ...' if len(jobs) > 1 else ''}) does not answer with a time: {error[:200]}",
            {
                "sql": sql[:500],
                "error": error[:1000],
                "failing_since": since,
                "jobs": jobs[:JOBS_SHOWN],
                "job_count": len(jobs),
            },
            summary=error[:200],
            job_id=jobs[0] if len(jobs) == 1 else None,
            tenant_id=tenant,
        )


def query_subject(sql: str) -> str:
    """A query's alert subject: stable, short (the query itself is in the evidence)."""
    return f"sql:{hashlib.sha256(sql.encode()).hexdigest()[:16]}"
