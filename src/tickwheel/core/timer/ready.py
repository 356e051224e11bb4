"""Due occurrences waiting to be fired: per tenant, served round-robin, and bounded per job.

A slot leaves the wheel when it is due and waits here until a batch has room and its tenant
is under its in-flight cap. While a tenant sits at its cap, its jobs keep coming due; without
a bound an every-second job would queue 3,600 slots in an hour and fire them all on release.
So each job keeps at most `bound` waiting slots (1 for `coalesce` and `skip`, `maxCatchUp` for
`catch_up`, the same rules an outage gets): pushing past it drops the job's oldest waiting
slot, and the caller records that slot as skipped. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence

_NOTHING: tuple[int, ...] = ()  # what most pushes drop: shared, not a new list each time


def backlog_bound(misfire_policy: str, max_catch_up: int) -> int:
    """How many due slots of one job may wait at once (see the module docstring)."""
    if misfire_policy == "catch_up":
        return max(1, max_catch_up)
    return 1


class ReadyQueue:
    """Waiting slots per job, and per tenant the jobs that have some, served round-robin.

    Memory is bounded by the waiting slots kept (each job's bound), never by how many came due.
    """

    def __init__(self) -> None:
        # Per tenant, each job with waiting slots once; per job, its waiting slot (an int: the
        # common case, a burst of a million jobs due at once) or slots in order (a deque).
        self._by_tenant: dict[str, deque[str]] = {}
        self._by_job: dict[str, int | deque[int]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def push(self, tenant: str, job_id: str, slot: int, bound: int) -> Sequence[int]:
        """Queue `slot`; returns the job's slots dropped to stay within `bound` (oldest first)."""
        waiting = self._by_job.get(job_id)
        if waiting is None:
            self._by_job[job_id] = slot
            self._size += 1
            jobs = self._by_tenant.get(tenant)
            if jobs is None:
                jobs = self._by_tenant[tenant] = deque()
            jobs.append(job_id)
            return _NOTHING
        if isinstance(waiting, int):
            if bound <= 1:
                self._by_job[job_id] = slot
                return [waiting]
            waiting = self._by_job[job_id] = deque((waiting,))
        waiting.append(slot)
        self._size += 1
        dropped = []
        while len(waiting) > bound:
            dropped.append(waiting.popleft())
            self._size -= 1
        return dropped

    def waiting(self, job_id: str) -> int:
        waiting = self._by_job.get(job_id)
        if waiting is None:
            return 0
        return 1 if isinstance(waiting, int) else len(waiting)

    def serve(
        self, limit: int, in_flight: Mapping[str, int], cap: int
    ) -> Iterator[tuple[str, int]]:
        """Up to `limit` (job_id, slot) pairs, one tenant after another (and within a tenant
        one job after another), skipping tenants with `cap` executions `in_flight` (no cap
        when `cap` is 0). Lazily: what the caller fires between two pairs counts at once."""
        by_tenant, by_job = self._by_tenant, self._by_job
        taken = 0
        while by_tenant and taken < limit:
            served = 0
            for tenant in list(by_tenant):
                if cap > 0 and in_flight.get(tenant, 0) >= cap:
                    continue  # its occurrences wait; other tenants go on
                served += 1
                taken += 1
                # The tenant's next job gives its oldest slot (inline: once per occurrence).
                jobs = by_tenant[tenant]
                job_id = jobs.popleft()
                waiting = by_job[job_id]
                self._size -= 1
                if isinstance(waiting, int):
                    slot = waiting
                    del by_job[job_id]
                else:
                    slot = waiting.popleft()
                    if waiting:
                        jobs.append(job_id)
                    else:
                        del by_job[job_id]
                if not jobs:
                    del by_tenant[tenant]
                yield job_id, slot
                if taken >= limit:
                    return
            if served == 0:
                return  # every waiting tenant is at its cap
