"""The console's workflow pages: the instance list, and one instance with its DAG (step states,
stuck markers), its event timeline, and the operator's actions (approve or reject an approval,
retry, complete or skip a step, cancel the instance), through `tickwheel.sdk.workflows`.

Every action names its actor (`console:<who>`, from the form) and a reason or note where the
SDK keeps one; the orchestrator folds it like any other input, so the timeline says who did it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.core.codeflow.definition import CODE_KIND
from tickwheel.core.workflow import parse_definition
from tickwheel.errors import InvalidInput
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import svg
from tickwheel.services.api.console.access import console_backend, workflows_for
from tickwheel.services.api.console.models import approx_duration, require_reason
from tickwheel.services.api.console.render import error_page, one, page, read_form, see_other

log = logging.getLogger("tickwheel.api.console")
router = APIRouter(include_in_schema=False)
WorkflowsSource = Callable[[Backend], Any]
STEP_ACTIONS = ("approve", "reject", "retry", "complete", "skip")


def sdk_workflows(backend: Backend) -> Any:
    """The SDK's workflow client on the API's cluster (approval keys from the environment)."""
    from tickwheel.sdk.workflows import WorkflowsClient

    return WorkflowsClient(backend.bootstrap, clock=backend.clock)


def _client(request: Request) -> Any:
    b: Backend = console_backend(request)
    return workflows_for(request, request.app.state.console_workflows(b))


def dag_steps(
    document: Mapping[str, Any], steps: Mapping[str, Mapping[str, Any]], now_ms: int
) -> tuple[list[svg.DagStep], list[dict[str, Any]]]:
    """The definition's steps with the instance's states, and one row per step for the table;
    a step running or waiting past its `expectedDuration` is marked stuck."""
    definition = parse_definition(dict(document))
    dag: list[svg.DagStep] = []
    rows: list[dict[str, Any]] = []
    for spec in definition.steps:
        state = dict(steps.get(spec.id) or {})
        status = str(state.get("status") or "pending")
        started = state.get("startedAt")
        stuck = (
            status in ("running", "waiting")
            and spec.expected_duration_ms is not None
            and started is not None
            and now_ms - int(started) > spec.expected_duration_ms
        )
        shown = f"{status} (stuck)" if stuck else status
        dag.append(svg.DagStep(spec.id, spec.depends_on, shown))
        rows.append(
            {
                "id": spec.id,
                "kind": spec.kind,
                "status": status,
                "stuck": stuck,
                "attempt": state.get("attempt"),
                "round": state.get("round"),
                "started": started,
                "ended": state.get("endedAt"),
                "compensation": state.get("compensation"),
                "for": approx_duration(now_ms - int(started)) if started else None,
            }
        )
    return dag, rows


def code_steps_shown(
    steps: Mapping[str, Mapping[str, Any]], now_ms: int
) -> tuple[list[svg.DagStep], list[dict[str, Any]]]:
    """A code workflow's steps, sleeps and waits in the order its run issued them (a chain:
    its code, not a declared graph, decides what comes next), one row each; a sleep or a
    wait shows its deadline."""
    dag: list[svg.DagStep] = []
    rows: list[dict[str, Any]] = []
    for label, state in steps.items():
        status = str(state.get("status") or "pending")
        dag.append(svg.DagStep(label, (dag[-1].step_id,) if dag else (), status))
        started, deadline = state.get("startedAt"), state.get("deadline")
        rows.append(
            {
                "id": label,
                "kind": state.get("kind"),
                "status": status,
                "stuck": False,
                "attempt": state.get("attempt"),
                "round": None,
                "started": started,
                "ended": state.get("endedAt"),
                "compensation": None,
                "for": approx_duration(now_ms - int(started)) if started else None,
                "deadline": deadline,
                # A code step is repaired through its workflow's code, not a DAG's step
                # actions; a waiting signal is answered by sending it.
                "code": True,
                "signal": state.get("name")
                if state.get("kind") == "signal" and status == "waiting"
                else None,
            }
        )
    return dag, rows


@router.get("/workflows", response_class=HTMLResponse)
def workflows_page(request: Request) -> Response:
    try:
        instances = _client(request).list()
        return page(request, "workflows.html", {"section": "workflows", "instances": instances})
    except Exception as exc:
        return error_page(request, exc, "workflows")


def workflow_context(request: Request, workflow_id: str) -> dict[str, Any]:
    client = _client(request)
    b: Backend = console_backend(request)
    timeline = client.get(workflow_id)
    document = client.definitions(timeline.definition_id).get(
        (timeline.definition_id, timeline.definition_version)
    )
    if document is None:
        raise InvalidInput(
            "definition",
            f"{timeline.definition_id} "
            f"v{timeline.definition_version} is not on workflows.definitions",
        )
    if document.get("kind") == CODE_KIND:
        dag, rows = code_steps_shown(timeline.steps, b.now_ms())
    else:
        dag, rows = dag_steps(document, timeline.steps, b.now_ms())
    return {
        "section": "workflows",
        "w": timeline,
        "steps": rows,
        "picture": svg.dag(dag),
        "events": timeline.events[-200:],
    }


@router.get("/workflows/{workflow_id}", response_class=HTMLResponse)
def workflow_page(request: Request, workflow_id: str) -> Response:
    try:
        return page(request, "workflow.html", workflow_context(request, workflow_id))
    except Exception as exc:
        return error_page(request, exc, "workflows")


def _act(client: Any, workflow_id: str, step: str, action: str, actor: str, note: str) -> str:
    if action in ("approve", "reject"):
        token = client.approval_token(workflow_id, step)
        decide = client.approve if action == "approve" else client.reject
        decide(token, actor=actor, note=note)
    elif action == "retry":
        client.retry_step(workflow_id, step, actor=actor)
    elif action == "complete":
        client.complete_step(workflow_id, step, None, actor=actor)
    else:
        client.skip_step(workflow_id, step, actor=actor)
    return f"{action} of {step} sent by {actor}: {note}"


def _actor(form: Mapping[str, list[str]]) -> str:
    who = one(form, "by").strip() or "operator"
    if len(who) > 100:
        raise InvalidInput("by", f"{len(who)} characters; accepted: 1-100")
    return f"console:{who}"


@router.post("/workflows/{workflow_id}/steps/{step}/{action}")
async def step_action(request: Request, workflow_id: str, step: str, action: str) -> Response:
    form = await read_form(request)
    try:
        if action not in STEP_ACTIONS:
            raise InvalidInput("action", f"{action!r}; accepted: {', '.join(STEP_ACTIONS)}")
        note = require_reason(one(form, "note"))
        said = await run_in_threadpool(
            _act, _client(request), workflow_id, step, action, _actor(form), note
        )
    except Exception as exc:
        return await run_in_threadpool(_refused, request, workflow_id, exc)
    log.info(
        "workflow step action",
        extra={"action": f"console_step_{action}", "workflow_id": workflow_id, "step": step},
    )
    return see_other(f"/workflows/{workflow_id}", said)


@router.post("/workflows/{workflow_id}/signals/{name}")
async def signal_workflow(request: Request, workflow_id: str, name: str) -> Response:
    """A signal for a code workflow's wait, its payload typed as JSON (empty: null)."""
    form = await read_form(request)
    try:
        text = (one(form, "payload") or "").strip()
        try:
            payload = json.loads(text) if text else None
        except ValueError as exc:
            raise InvalidInput(
                "payload", f"not JSON ({exc.args[0]}); accepted: a JSON value"
            ) from exc
        client = _client(request)
        await run_in_threadpool(lambda: client.signal(workflow_id, name, payload))
    except Exception as exc:
        return await run_in_threadpool(_refused, request, workflow_id, exc)
    return see_other(f"/workflows/{workflow_id}", f"signal {name} sent")


@router.post("/workflows/{workflow_id}/cancel")
async def cancel_workflow(request: Request, workflow_id: str) -> Response:
    form = await read_form(request)
    try:
        reason = require_reason(one(form, "note"))
        actor = _actor(form)
        client = _client(request)
        await run_in_threadpool(lambda: client.cancel(workflow_id, actor=actor, reason=reason))
    except Exception as exc:
        return await run_in_threadpool(_refused, request, workflow_id, exc)
    return see_other(f"/workflows/{workflow_id}", f"cancel sent: {reason}")


def _refused(request: Request, workflow_id: str, exc: Exception) -> Response:
    from tickwheel.services.api.problems import from_exception

    problem = from_exception(exc)
    if problem.status >= 500 or problem.status == 404:
        return error_page(request, exc, "workflows")
    try:
        context = workflow_context(request, workflow_id)
    except Exception as again:
        return error_page(request, again, "workflows")
    context["error"] = problem.detail
    return page(request, "workflow.html", context, status=problem.status)
