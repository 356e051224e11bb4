"""`DELETE /jobs/{id}` awaited on the event loop as a create is (decisions 0165, 0179): with
writes known to be commands the route awaits the jobs client's `delete_async` on its loop
(no route thread held for the verdict); otherwise `delete` runs on a route thread; a late
verdict is a 202 either way."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

from tickwheel.sdk.job_commands import VerdictPending
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
