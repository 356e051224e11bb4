"""Retrying an execution from its page (cancel is in `actions.py`).

An execution is retried as its dead letter is (decision 0102): its job is triggered for a new
execution with fresh attempts. When the execution has an unresolved dead letter, the retry
goes through it (`DeadLettersClient.retry`), so the letter is marked retried too; a cancelled
or failed execution without one simply triggers its job. A workflow step's execution is
retried by its workflow, never here (the workflow's fold decides its steps).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from tickwheel.core.identity import execution_id as execution_id_of
from tickwheel.errors import InvalidInput
from tickwheel.sdk.dead_letters import DeadLettersClient, step_workflow
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.actions import who
from tickwheel.services.api.console.render import error_page, one, read_form, see_other
from tickwheel.services.api.routes_dead_letter_actions import visible_letters

router = APIRouter(include_in_schema=False)


def retry_execution(
    request: Request, b: Backend, execution_id: str, job_id: str, by: str, note: str | None
) -> dict[str, Any]:
    """A new execution of `job_id` for `execution_id`: through its unresolved dead letter if it
    has one, else a trigger. Returns the new execution's id and how it was asked for."""
    workflow = step_workflow(job_id)
    if workflow is not None:
        raise InvalidInput("execution", f"a step of workflow {workflow!r}; accepted: retry the "
                           "step on its workflow's page")  # fmt: skip
    letter = next((d for d in visible_letters(request, b)
                   if d.get("execution_id") == execution_id and not d.get("resolution")), None)  # fmt: skip
    if letter is not None:
        client = DeadLettersClient(b.bootstrap, b.clock, jobs=b.jobs, tenant_id=b.tenant_id)
        done = client.retry(letter["dead_letter_id"], by=by, note=note, letters=[letter])
        return {"execution_id": done["retry_execution_id"], "via": "its dead letter"}
    version = int(b.jobs.get(job_id)["version"])
    command = b.jobs.trigger(job_id)
    return {"execution_id": execution_id_of(job_id, version, int(command["requested_at"])),
            "via": "a trigger of its job"}  # fmt: skip


@router.post("/executions/{execution_id}/retry")
async def retry(request: Request, execution_id: str) -> Response:
    b: Backend = console_backend(request)
    form = await read_form(request)
    try:
        job_id = one(form, "jobId").strip()
        if not job_id:
            raise InvalidInput("jobId", "required; accepted: the execution's job")
        note = one(form, "reason").strip() or None
        done = await run_in_threadpool(retry_execution, request, b, execution_id, job_id,
                                       who(form), note)  # fmt: skip
    except Exception as exc:
        return error_page(request, exc, "jobs")
    return see_other(f"/executions/{execution_id}?retried={done['execution_id']}",
                     f"retried through {done['via']}: new execution {done['execution_id']}")  # fmt: skip
