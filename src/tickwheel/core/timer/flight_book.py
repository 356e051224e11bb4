"""Which executions a partition has in flight, counted the ways its decisions ask: per job (for
overlap policies), per tenant (for tenant caps) and in bytes per job (for the in-flight budget
a job's one TimerState record allows). The `ExecutionTracker`'s bookkeeping, apart from what
it decides. Pure."""

from __future__ import annotations

from collections import Counter

from tickwheel.core.timer.flights import InFlight

# A job's in-flight requests travel in its one TimerState record, which must stay under Kafka's
# 1 MiB message limit: past this budget a job starts no new execution (its slots are recorded
# as skipped) until some finish. Otherwise one large backfill would make every transaction of
# the partition fail, and the partition would restore and fail again forever.
IN_FLIGHT_BYTES_PER_JOB = 768 * 1024
# What a pending entry costs beside its payload (ids, times, the request's other fields).
PENDING_OVERHEAD_BYTES = 512


def footprint(payload: str) -> int:
    """About how many bytes one in-flight request with `payload` adds to its job's state."""
    return len(payload.encode()) + PENDING_OVERHEAD_BYTES


class FlightBook:
    def __init__(self) -> None:
        self.in_flight: dict[str, InFlight] = {}
        # Per job, its one execution in flight (the common case: no set per job in a burst of
        # a million) or its several; never an empty set.
        self.ids_by_job: dict[str, str | set[str]] = {}
        self.by_tenant: Counter[str] = Counter()
        self.bytes_by_job: Counter[str] = Counter()

    def running_count(self, job_id: str) -> int:
        ids = self.ids_by_job.get(job_id)
        return 0 if ids is None else 1 if isinstance(ids, str) else len(ids)

    def ids_of(self, job_id: str) -> list[str]:
        """The job's executions in flight, sorted."""
        ids = self.ids_by_job.get(job_id)
        return [] if ids is None else [ids] if isinstance(ids, str) else sorted(ids)

    def _add(self, flight: InFlight, size: int | None = None) -> None:
        # Once per occurrence in a burst: plain dict operations (a Counter's missing key goes
        # through Python-level __missing__; a setdefault builds a set it may throw away).
        request = flight.request
        execution_id, job_id = request["execution_id"], request["job_id"]
        self.in_flight[execution_id] = flight
        ids = self.ids_by_job.get(job_id)
        if ids is None:
            self.ids_by_job[job_id] = execution_id
        elif isinstance(ids, str):
            if ids != execution_id:
                self.ids_by_job[job_id] = {ids, execution_id}
        else:
            ids.add(execution_id)
        by_tenant, tenant = self.by_tenant, request["tenant_id"]
        by_tenant[tenant] = by_tenant.get(tenant, 0) + 1
        if size is None:
            size = footprint(request["payload"])
        self.bytes_by_job[job_id] = self.bytes_by_job.get(job_id, 0) + size

    def _finish(self, execution_id: str) -> InFlight | None:
        flight = self.in_flight.pop(execution_id, None)
        if flight is not None:
            job_id = flight.request["job_id"]
            ids = self.ids_by_job.get(job_id)
            if isinstance(ids, str):
                if ids == execution_id:
                    del self.ids_by_job[job_id]
            elif ids is not None:
                ids.discard(execution_id)
                if not ids:
                    del self.ids_by_job[job_id]
            self.by_tenant[flight.request["tenant_id"]] -= 1
            self.bytes_by_job[job_id] -= footprint(flight.request["payload"])
            if self.bytes_by_job[job_id] <= 0:
                del self.bytes_by_job[job_id]
        return flight
