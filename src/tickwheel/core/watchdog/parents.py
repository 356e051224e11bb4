"""Parent conditions: one cause behind many alerts, and the children it explains.

* `timer_partition_stalled` (subject `partition <p>`) — at least `parent_min_children` jobs
  owned by timer partition p are overdue with their newest owed slot never fired, and nothing
  on p has fired since the earliest of their deadlines: the partition stopped advancing (its
  timer is stopped, or hung, or lost its assignment), not each job on its own.
* `no_live_worker` (subject the priority) — an execution of that priority has waited longer
  than the ready-age threshold, and no worker has taken any execution of that priority since
  it was requested: nobody is serving the queue.

Children keep their own incidents — shown, never hidden — marked `suppressed_by` the parent,
and are not notified on their own while it explains them (`lifecycle`): a stalled partition of
a thousand jobs is one notification, not a storm.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.facts import Facts
from tickwheel.core.watchdog.lifecycle import fingerprint
from tickwheel.core.watchdog.thresholds import Thresholds

PARENT_KINDS = ("timer_partition_stalled", "no_live_worker")
JOBS_SHOWN = 10


def with_parents(
    facts: Facts, current: Iterable[Condition], watermark: int, thresholds: Thresholds
) -> list[Condition]:
    """The parents that hold, first, then every condition, children marked `suppressed_by`."""
    conditions = list(current)
    parents: list[Condition] = []
    explained: dict[int, str] = {}  # index in `conditions` -> parent fingerprint
    for parent, children in [
        *_stalled_partitions(facts, conditions, thresholds),
        *_idle_priorities(facts, conditions, watermark, thresholds),
    ]:
        parents.append(parent)
        fp = fingerprint(parent.kind, parent.subject)
        for index in children:
            explained.setdefault(index, fp)
    marked = [
        replace(c, suppressed_by=explained[i]) if i in explained else c
        for i, c in enumerate(conditions)
    ]
    return parents + marked


def _stalled_partitions(
    facts: Facts, conditions: list[Condition], thresholds: Thresholds
) -> list[tuple[Condition, list[int]]]:
    by_partition: dict[int, list[tuple[int, int]]] = {}  # partition -> [(deadline, index)]
    for index, c in enumerate(conditions):
        if c.kind != "job_overdue" or c.cause != "never_fired" or c.job_id is None:
            continue
        job = facts.jobs.get(c.job_id)
        if job is None or job.partition is None:
            continue
        by_partition.setdefault(job.partition, []).append((int(c.evidence["deadline"]), index))
    out = []
    for partition, children in sorted(by_partition.items()):
        if len(children) < thresholds.parent_min_children:
            continue
        earliest = min(deadline for deadline, _ in children)
        fired = facts.partition_fired_ms.get(partition)
        if fired is not None and fired >= earliest:
            continue  # the partition fired something since: these jobs are late each on its own
        jobs = sorted(str(conditions[i].job_id) for _, i in children)
        parent = Condition(
            "timer_partition_stalled",
            f"partition {partition}",
            "critical",
            f"timer partition {partition} has fired nothing since "
            f"{'it was first seen' if fired is None else fired}: {len(children)} job(s) overdue "
            "with slots never fired",
            {
                "partition": partition,
                "last_fired_at": fired,
                "since_deadline": earliest,
                "children": len(children),
                "jobs": jobs[:JOBS_SHOWN],
            },
        )
        out.append((parent, [i for _, i in children]))
    return out


def _idle_priorities(
    facts: Facts, conditions: list[Condition], watermark: int, thresholds: Thresholds
) -> list[tuple[Condition, list[int]]]:
    oldest: dict[str, int] = {}
    # Settled executions are not held one by one: when one of each priority was last taken.
    taken: dict[str, int] = dict(facts.taken_ms)
    waiting: dict[str, int] = {}
    for execution in facts.executions.values():
        priority = execution.priority or "normal"
        if execution.ready and execution.requested_at_ms is not None:
            oldest[priority] = min(
                oldest.get(priority, execution.requested_at_ms), execution.requested_at_ms
            )
            waiting[priority] = waiting.get(priority, 0) + 1
        elif execution.taken_attempt:
            taken[priority] = max(taken.get(priority, 0), execution.last_seen_ms)
    out = []
    for priority, requested in sorted(oldest.items()):
        if watermark - requested < thresholds.oldest_ready_age_ms:
            continue
        if taken.get(priority, requested - 1) >= requested:
            continue  # a worker took work of this priority since: slow, not absent
        children = [
            i
            for i, c in enumerate(conditions)
            if (c.kind == "oldest_ready_age" and c.subject.startswith(f"{priority}/"))
            or (
                c.kind == "job_overdue"
                and c.cause == "fired_not_started"
                and _priority(facts, c.job_id) == priority
            )
        ]
        parent = Condition(
            "no_live_worker",
            priority,
            "critical",
            f"no worker has taken a {priority} execution since {requested}: "
            f"{waiting[priority]} waiting",
            {
                "priority": priority,
                "oldest_requested_at": requested,
                "waiting": waiting[priority],
                "last_taken_at": taken.get(priority),
                "children": len(children),
            },
        )
        out.append((parent, children))
    return out


def _priority(facts: Facts, job_id: str | None) -> str | None:
    job = facts.jobs.get(job_id) if job_id is not None else None
    spec = job.spec if job is not None else None
    return spec.priority if spec is not None else None


def ages(facts: Facts, watermark: int) -> tuple[dict[str, int], int | None]:
    """For the metrics (aggregates, never a series per job): the oldest ready execution's age
    per priority, and the oldest unresolved dead letter's age, at `watermark` (ms)."""
    ready: dict[str, int] = {}
    dead: int | None = None
    for execution in facts.executions.values():
        if execution.ready and execution.requested_at_ms is not None:
            priority = execution.priority or "normal"
            ready[priority] = max(ready.get(priority, 0), watermark - execution.requested_at_ms)
        if execution.dead_unresolved and execution.dead_at_ms is not None:
            age = watermark - execution.dead_at_ms
            dead = age if dead is None else max(dead, age)
    return ready, dead
