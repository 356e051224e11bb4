"""A tenant's view of the jobs: what a key bound to tenant T reads and changes (decision 0068).

Another tenant's job is answered exactly as a job that does not exist (`UnknownJob`, a 404):
no existence leak through reads, changes, triggers or lists. A definition without a tenant
(written by the SDK or the CLI) belongs to the tenant `default`. Job ids stay one namespace
across tenants, so a create with an id another tenant holds is a 409 (which says the id is
taken, not by whom).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

from tickwheel.errors import InvalidInput
from tickwheel.records import JobDefinition
from tickwheel.sdk.jobs import UnknownJob
from tickwheel.services.api.job_clients import AsyncCreates, JobsLike
from tickwheel.services.api.keys import DEFAULT_TENANT

# The tenant a write acts for, read by the jobs client that sends its command: the command's
# id names it (decision 0166), a delete's included, whose command carries no definition.
ACTING_TENANT: ContextVar[str | None] = ContextVar("acting_tenant", default=None)


@contextmanager
def _acting(tenant_id: str) -> Iterator[None]:
    token = ACTING_TENANT.set(tenant_id)
    try:
        yield
    finally:
        ACTING_TENANT.reset(token)


def owner_of(record: Mapping[str, Any]) -> str:
    """The tenant a definition (camelCase) or history row (snake_case) belongs to."""
    return record.get("tenantId") or record.get("tenant_id") or DEFAULT_TENANT


class TenantJobs:
    """`JobsLike` narrowed to one tenant's jobs."""

    def __init__(self, jobs: JobsLike, tenant_id: str) -> None:
        self.jobs = jobs
        self.tenant_id = tenant_id

    def get(self, job_id: str) -> dict[str, Any]:
        record = self.jobs.get(job_id)
        if owner_of(record) != self.tenant_id:
            raise UnknownJob(job_id)
        return record

    def list(self) -> list[dict[str, Any]]:
        return [r for r in self.jobs.list() if owner_of(r) == self.tenant_id]

    def _owned(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        given = spec.get("tenantId")
        if given is not None and given != self.tenant_id:
            raise InvalidInput(
                "tenantId", f"{given!r}; accepted: your key's tenant {self.tenant_id!r}, or none"
            )
        return {**spec, "tenantId": self.tenant_id}

    def create(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        with _acting(self.tenant_id):
            return self.jobs.create(self._owned(spec))

    def creates_await(self) -> bool:
        """Whether the jobs' `create_async` holds no thread (decision 0165)."""
        ask = getattr(self.jobs, "creates_await", None)
        return bool(ask is not None and ask())

    async def create_async(self, spec: Mapping[str, Any]) -> JobDefinition:
        jobs = cast(AsyncCreates, self.jobs)  # asked by `creates_await` first
        with _acting(self.tenant_id):
            return await jobs.create_async(self._owned(spec))

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        self.get(job_id)
        with _acting(self.tenant_id):
            return self.jobs.update(job_id, changes, expected_version)

    def delete(self, job_id: str) -> None:
        self.get(job_id)
        with _acting(self.tenant_id):
            self.jobs.delete(job_id)

    async def update_async(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        """`update` with its verdicts awaited (asked by `creates_await` first)."""
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self.get, job_id)
        jobs = cast(AsyncCreates, self.jobs)
        with _acting(self.tenant_id):
            return await jobs.update_async(job_id, changes, expected_version)

    async def delete_async(self, job_id: str) -> None:
        """`delete` with its verdict awaited (asked by `creates_await` first); the tenant's
        check reads the catalogue (a broker round trip) on a thread, as `get` does."""
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self.get, job_id)
        jobs = cast(AsyncCreates, self.jobs)
        with _acting(self.tenant_id):
            await jobs.delete_async(job_id)

    def trigger(self, job_id: str) -> dict[str, Any]:
        self.get(job_id)
        return self.jobs.trigger(job_id)

    def backfill(
        self, job_id: str, from_ms: int, to_ms: int, command_id: str | None = None
    ) -> dict[str, Any]:
        self.get(job_id)
        return self.jobs.backfill(job_id, from_ms, to_ms, command_id)
