"""Deletes and patches awaited on the event loop as a create is (decisions 0165, 0179): with
writes known to be commands the route awaits the jobs client's `delete_async`/`update_async`
on its loop (no route thread held for the verdict; a read of the current definition still
runs on a thread); otherwise `delete`/`update` run on a route thread; a late verdict is a 202
either way, a stale version a 409."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from tickwheel.sdk.job_commands import VerdictPending, VersionConflict
from tickwheel.services.api.problems import Problem
from tickwheel.services.api.routes_job_commands import update_record_async
from tickwheel.services.api.routes_jobs import delete_job


class Jobs:
    def __init__(self, awaits: bool, late: bool = False) -> None:
        self.awaits, self.late = awaits, late
        self.calls: list[tuple[str, str, str]] = []  # (how, job, thread)

    def creates_await(self) -> bool:
        return self.awaits

    async def delete_async(self, job_id: str) -> None:
        self.calls.append(("awaited", job_id, threading.current_thread().name))
        if self.late:
            raise VerdictPending("c-1", job_id, 5.0)

    def delete(self, job_id: str) -> None:
        self.calls.append(("thread", job_id, threading.current_thread().name))

    def get(self, job_id: str) -> dict[str, Any]:
        self.calls.append(("read", job_id, threading.current_thread().name))
        return {"jobId": job_id, "version": 3}

    async def update_async(
        self, job_id: str, changes: dict[str, Any], expected: int | None = None
    ) -> dict[str, Any]:
        self.calls.append(("awaited", job_id, threading.current_thread().name))
        if self.late:
            raise VersionConflict(job_id, 4, 3)
        return {"jobId": job_id, "version": 4, **changes}

    def update(
        self, job_id: str, changes: dict[str, Any], expected: int | None = None
    ) -> dict[str, Any]:
        self.calls.append(("thread", job_id, threading.current_thread().name))
        return {"jobId": job_id, "version": 4, **changes}


def run(jobs: Jobs) -> Any:
    async def main() -> tuple[Any, str]:
        return await delete_job(SimpleNamespace(jobs=jobs), "nightly"), (  # type: ignore[arg-type]
            threading.current_thread().name
        )

    return asyncio.run(main())


def test_a_delete_is_awaited_on_the_loop_when_writes_are_commands() -> None:
    jobs = Jobs(awaits=True)
    response, loop_thread = run(jobs)
    assert response.status_code == 204
    assert jobs.calls == [("awaited", "nightly", loop_thread)]


def test_a_delete_runs_on_a_route_thread_otherwise() -> None:
    jobs = Jobs(awaits=False)
    response, loop_thread = run(jobs)
    assert response.status_code == 204
    [(how, job_id, thread)] = jobs.calls
    assert (how, job_id) == ("thread", "nightly") and thread != loop_thread


def test_a_late_awaited_delete_is_a_202_with_its_status_resource() -> None:
    response, _ = run(Jobs(awaits=True, late=True))
    assert response.status_code == 202
    assert response.headers["location"] == "/v1/job-commands/c-1"


def patched(jobs: Jobs, expected: int | None) -> tuple[dict[str, Any], str]:
    async def main() -> tuple[dict[str, Any], str]:
        record = await update_record_async(SimpleNamespace(jobs=jobs), "nightly",  # type: ignore[arg-type]
                                           {"enabled": False}, expected)  # fmt: skip
        return record, threading.current_thread().name

    return asyncio.run(main())


def test_a_patch_awaits_its_verdict_on_the_loop_and_reads_on_a_thread() -> None:
    jobs = Jobs(awaits=True)
    record, loop_thread = patched(jobs, 3)
    assert record == {"jobId": "nightly", "version": 4, "enabled": False}
    assert [(how, thread == loop_thread) for how, _job, thread in jobs.calls] == [
        ("read", False), ("awaited", True)]  # fmt: skip


def test_a_patch_at_a_stale_version_is_a_409_before_or_after_its_command() -> None:
    with pytest.raises(Problem) as stale:
        patched(Jobs(awaits=True), 2)  # the read shows version 3
    assert stale.value.status == 409 and stale.value.extensions.get("currentVersion") == 3
    with pytest.raises(Problem) as judged:
        patched(Jobs(awaits=True, late=True), 3)  # the judge found version 4
    assert judged.value.status == 409 and judged.value.extensions.get("currentVersion") == 4


def test_a_patch_runs_on_a_route_thread_when_writes_may_be_direct() -> None:
    jobs = Jobs(awaits=False)
    record, loop_thread = patched(jobs, 3)
    assert record["version"] == 4
    assert all(thread != loop_thread for _how, _job, thread in jobs.calls)
