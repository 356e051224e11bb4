"""The API's FastAPI application: `create_app(backend)`.

Every route is served under `/v1` (in the OpenAPI document) and again without the prefix
(not documented twice), because the seeds' clients call `/jobs` and `/schedules` literally.
The docs pages load Swagger UI and ReDoc from files shipped in the `fastapi-offline` wheel:
they work with no internet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import fastapi_offline
from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from tickwheel.services.api import (
    routes_alerts,
    routes_dead_letter_actions,
    routes_executions,
    routes_history,
    routes_jobs,
    routes_occurrences,
    routes_schedules,
    routes_streams,
    routes_workflows,
)
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import mount as mount_console
from tickwheel.services.api.door import GUARDED, Door, install_door
from tickwheel.services.api.fast_create import FastCreates
from tickwheel.services.api.metrics import install_metrics, metrics_router
from tickwheel.services.api.models import Health
from tickwheel.services.api.problems import Problem, install, problem_responses

PREFIX = "/v1"
OPENAPI_URL = f"{PREFIX}/openapi.json"
STATIC_URL = f"{PREFIX}/static"
STATIC_DIR = Path(fastapi_offline.__file__).parent / "static"
ROUTERS = (
    routes_jobs.router,
    routes_occurrences.router,
    routes_schedules.router,
    routes_executions.router,
    routes_streams.router,
    routes_workflows.router,
    routes_alerts.router,
    routes_dead_letter_actions.router,
    routes_history.router,
)

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details, with tickwheel's extensions",
    "required": ["type", "code", "title", "status", "requestId"],
    "properties": {
        "type": {"type": "string", "examples": ["urn:tickwheel:problem:validation-error"]},
        "code": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "requestId": {"type": "string"},
        "currentVersion": {"type": "integer"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "pointer": {"type": "string", "description": "RFC 6901, into the body"},
                    "parameter": {"type": "string"},
                    "in": {"type": "string"},
                    "detail": {"type": "string"},
                },
            },
        },
    },
    "additionalProperties": True,
}


def _health_router() -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get(
        "/healthz",
        summary="The process is up",
        responses={
            200: {"model": Health, "content": {"application/json": {"example": {"status": "ok"}}}}
        },
    )
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @router.get(
        "/readyz",
        summary="The Kafka cluster answers",
        responses={
            200: {
                "model": Health,
                "content": {"application/json": {"example": {"status": "ready"}}},
            },
            **problem_responses(503),
        },
    )
    def readyz(request: Request) -> dict[str, str]:
        backend: Backend = request.app.state.backend
        if not backend.broker_ready():
            raise Problem(
                503,
                "kafka-unavailable",
                "no Kafka broker answered within 2 s",
                headers={"Retry-After": "5"},
            )
        return {"status": "ready"}

    return router


def _docs(app: FastAPI) -> None:
    favicon = f"{STATIC_URL}/favicon.png"

    @app.get(f"{PREFIX}/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL,
            title="tickwheel API",
            swagger_js_url=f"{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=favicon,
        )

    @app.get(f"{PREFIX}/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=OPENAPI_URL,
            title="tickwheel API",
            redoc_js_url=f"{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=favicon,
            with_google_fonts=False,
        )

    app.mount(STATIC_URL, StaticFiles(directory=STATIC_DIR), name="static")


def _secure(schema: dict[str, Any]) -> None:
    """Document the bearer key on every operation the door guards (decision 0068)."""
    schema["components"]["securitySchemes"] = {
        "apiKey": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "tw_<key id>_<secret>",
            "description": "An API key: tickwheel api-keys create",
        }
    }
    idempotency_key = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "A retry with the same key and body gets the first answer again "
        "(24 h); another body with the key is a 422 (decision 0069)",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    }
    for path, item in schema.get("paths", {}).items():
        if GUARDED.match(path):
            for method, operation in item.items():
                operation["security"] = [{"apiKey": []}]
                if method == "post":
                    operation.setdefault("parameters", []).append(idempotency_key)


# Where a created job's id leads (OpenAPI links): schemathesis' stateful phase chains them.
JOB_LINKS = {
    "GetJob": ("/v1/jobs/{job_id}", "get", "job_id"),
    "PatchJob": ("/v1/jobs/{job_id}", "patch", "job_id"),
    "PauseJob": ("/v1/jobs/{job_id}/pause", "post", "job_id"),
    "ResumeJob": ("/v1/jobs/{job_id}/resume", "post", "job_id"),
    "TriggerJob": ("/v1/jobs/{job_id}/trigger", "post", "job_id"),
    "JobOccurrences": ("/v1/jobs/{job_id}/occurrences", "get", "job_id"),
    "GetSchedule": ("/v1/schedules/{schedule_id}", "get", "schedule_id"),
    "PatchSchedule": ("/v1/schedules/{schedule_id}", "patch", "schedule_id"),
    "DeleteJob": ("/v1/jobs/{job_id}", "delete", "job_id"),
}
# Where a started workflow's id leads.
WORKFLOW_LINKS = {
    "GetWorkflow": ("/v1/workflows/{workflow_id}", "get", "workflow_id"),
    "WorkflowEvents": ("/v1/workflows/{workflow_id}/events", "get", "workflow_id"),
    "CancelWorkflow": ("/v1/workflows/{workflow_id}/cancel", "post", "workflow_id"),
    "RetryStep": ("/v1/executions/{workflow_id}/steps/{step_id}/retry", "post", "workflow_id"),
}


def _link(schema: dict[str, Any]) -> None:
    paths = schema.get("paths", {})
    for creator, field, status, links in (
        ("/v1/jobs", "jobId", "201", JOB_LINKS),
        ("/v1/schedules", "id", "201", JOB_LINKS),
        ("/v1/workflows", "workflowId", "202", WORKFLOW_LINKS),
    ):
        created = paths.get(creator, {}).get("post", {}).get("responses", {}).get(status)
        if created is None:
            continue
        created["links"] = {
            name: {
                "operationId": paths[path][method]["operationId"],
                "parameters": {param: f"$response.body#/{field}"},
            }
            for name, (path, method, param) in links.items()
            if method in paths.get(path, {})
        }


def _workflows_client(backend: Backend) -> Any:
    """The SDK's client with its reads answered from a followed view (decision 0140)."""
    from tickwheel.services.api.workflow_view import FollowedWorkflows

    return FollowedWorkflows(backend.bootstrap, clock=backend.clock)


# Threads for the sync routes. A job write holds its thread until its verdict (one command
# round trip and the judge's transaction, ~100 ms), so anyio's default of 40 capped the creates
# in flight at 40 whatever the clients sent (decision 0152); a waiting thread costs no CPU.
ROUTE_THREADS = 256


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    anyio.to_thread.current_default_thread_limiter().total_tokens = ROUTE_THREADS
    yield


def create_app(
    backend: Backend | None = None, door: Door | None = None, workflows: Any = None
) -> FastAPI:
    """The application, acting through `backend` (the environment's cluster if None),
    behind `door` (keys, limits, idempotency, audit over the cluster's topics if None), with
    `workflows` (a `WorkflowsClient` on the backend's cluster if None)."""
    app = FastAPI(
        title="tickwheel",
        version="1",
        summary="A Kafka-native job scheduler: jobs, schedules, executions",
        openapi_url=OPENAPI_URL,
        docs_url=None,
        redoc_url=None,
        lifespan=_lifespan,
    )
    app.state.backend = backend = backend or Backend.from_env()
    app.state.workflows = workflows or _workflows_client(backend)
    # Innermost of the app's own layers: inside the request id, the metrics and the door.
    app.add_middleware(FastCreates)  # POST /jobs past FastAPI's machinery (decision 0165)
    install(app)
    install_metrics(app)
    now = backend.clock.now
    install_door(app, door or Door.open(backend.bootstrap, now), now)
    health = _health_router()
    for router in (health, metrics_router(), *ROUTERS):
        app.include_router(router, prefix=PREFIX)
        app.include_router(router, include_in_schema=False)
    _docs(app)
    mount_console(app)  # the web console, /console (decision 0065)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
                PROBLEM_SCHEMA
            )
            _secure(schema)
            _link(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
