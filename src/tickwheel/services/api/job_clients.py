"""What the API needs of a jobs client: the calls its routes make (`JobsLike`), and the
awaitable writes a client may add (`AsyncCreates`). `Backend` holds one; `TenantJobs`
(tenancy.py) narrows one to a tenant; `FollowedJobs` (followed_jobs.py) is the one over the
cluster, and a test's fake is another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tickwheel.records import JobDefinition


class JobsLike(Protocol):
    """The part of `tickwheel.sdk.JobsClient` the API uses."""

    def get(self, job_id: str) -> dict[str, Any]: ...
    def list(self) -> list[dict[str, Any]]: ...
    def create(self, spec: dict[str, Any]) -> dict[str, Any]: ...
    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]: ...
    def delete(self, job_id: str) -> None: ...
    def trigger(self, job_id: str) -> dict[str, Any]: ...
    def backfill(
        self, job_id: str, from_ms: int, to_ms: int, command_id: str | None = None
    ) -> dict[str, Any]: ...


class AsyncCreates(Protocol):
    """A jobs client whose creates a coroutine can await with no thread held (decision 0165),
    when `creates_await()` says so."""

    def creates_await(self) -> bool: ...
    async def create_async(self, spec: Mapping[str, Any]) -> JobDefinition: ...
    async def delete_async(self, job_id: str) -> None: ...
    async def update_async(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]: ...
