"""`GET /metrics`: the API's own figures in the Prometheus text format.

Requests by method, route template (never the raw path: job ids would explode the series)
and status, their latency as a histogram, and the idempotent replays and rate-limit refusals
among them. Tenants are not a label (their count is unbounded); per-tenant usage is in
`api.audit`. The endpoint asks for no key, like `/healthz`: bind the API to loopback or keep
`/metrics` behind the proxy that scrapes it.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("method", "route", "status")
        self.requests = Counter(
            "tickwheel_api_requests", "HTTP requests answered", labels, registry=self.registry
        )
        self.latency = Histogram(
            "tickwheel_api_request_seconds",
            "Time to answer a request",
            ("method", "route"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.replays = Counter(
            "tickwheel_api_idempotent_replays",
            "POSTs answered with a recorded response",
            registry=self.registry,
        )

        # Each (method, route, status)'s series, looked up once: `labels()` builds and checks
        # its key under the metric's lock on every call. Bounded: routes are templates.
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float, replayed: bool) -> None:
        series = self._series.get((method, route, status))
        if series is None:
            series = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route),
            )
            self._series[(method, route, status)] = series
        series[0].inc()
        series[1].observe(seconds)
        if replayed:
            self.replays.inc()


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    return str(getattr(route, "path", None) or "unmatched")


class MeasureRequests:
    """Plain ASGI middleware (no task and body stream per request, as `app.middleware("http")`
    costs): times each HTTP request to its last body chunk and counts it by its status."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        started = time.perf_counter()
        answered: dict[str, Any] = {"status": 500, "replayed": False}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                answered["status"] = message["status"]
                answered["replayed"] = (b"idempotent-replayed", b"true") in [
                    (k.lower(), v) for k, v in message.get("headers", ())
                ]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.observe(
                scope["method"],
                _route_of(scope),
                answered["status"],
                time.perf_counter() - started,
                answered["replayed"],
            )


def install_metrics(app: FastAPI) -> ApiMetrics:
    metrics = ApiMetrics()
    app.state.metrics = metrics
    app.add_middleware(MeasureRequests, metrics=metrics)
    return metrics


def metrics_router() -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get(
        "/metrics",
        summary="The API's metrics (Prometheus text format)",
        response_class=Response,
        responses={
            200: {
                "description": "Prometheus exposition",
                "content": {
                    "text/plain": {
                        "schema": {"type": "string"},
                        "example": 'tickwheel_api_requests_total{method="GET"} 3.0\n',
                    }
                },
            }
        },
    )
    def metrics(request: Request) -> Response:
        registry = request.app.state.metrics.registry
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router
