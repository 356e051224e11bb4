"""Retrying an execution from its page (cancel is in `actions.py`).

An execution is retried as its dead letter is (decision 0102): its job is triggered for a new
execution with fresh attempts. When the execution has an unresolved dead letter, the retry
goes through it (`DeadLettersClient.retry`), so the letter is marked retried too; a cancelled
or failed execution without one simply triggers its job, and one whose letter was resolved
already is refused. A workflow step's execution is retried by its workflow, never here (the
workflow's fold decides its steps). `POST /runs/{id}/retry` shares the logic
(`tickwheel.sdk.dead_letters.retry_execution`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from tickwheel.errors import InvalidInput
from tickwheel.sdk.dead_letters import DeadLettersClient
from tickwheel.sdk.dead_letters import retry_execution as shared_retry
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.actions import who
from tickwheel.services.api.console.render import error_page, one, read_form, see_other
from tickwheel.services.api.routes_dead_letter_actions import visible_letters

router = APIRouter(include_in_schema=False)


def retry_execution(
    request: Request, b: Backend, execution_id: str, job_id: str, by: str, note: str | None
) -> dict[str, Any]:
    """A new execution of `job_id` for `execution_id`, as `POST /runs/{id}/retry` asks for one
    (`tickwheel.sdk.dead_letters.retry_execution`), over the letters this tenant may act on."""
    client = DeadLettersClient(b.bootstrap, b.clock, jobs=b.jobs, tenant_id=b.tenant_id)
    done = shared_retry(client, visible_letters(request, b), execution_id, job_id, by=by, note=note)
    via = "its dead letter" if done["via"] == "dead-letter" else "a trigger of its job"
    return {**done, "via": via}


@router.post("/executions/{execution_id}/retry")
async def retry(request: Request, execution_id: str) -> Response:
    b: Backend = console_backend(request)
    form = await read_form(request)
    try:
        job_id = one(form, "jobId").strip()
        if not job_id:
            raise InvalidInput("jobId", "required; accepted: the execution's job")
        note = one(form, "reason").strip() or None
        done = await run_in_threadpool(
            retry_execution, request, b, execution_id, job_id, who(form), note
        )
    except Exception as exc:
        return error_page(request, exc, "jobs")
    return see_other(
        f"/executions/{execution_id}?retried={done['execution_id']}",
        f"retried through {done['via']}: new execution {done['execution_id']}",
    )
