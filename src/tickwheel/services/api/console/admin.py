"""The admin page: API keys (list, issue, revoke) and the watchdog's webhook sinks (a test
delivery to one).

Keys are issued and revoked by the functions `tickwheel api-keys` uses
(`tickwheel.services.api.keys`), so the record on `api.keys` is the same. A new key's token
is shown once, on the page that answers the form (never in a redirect's URL, which browsers
keep in their history), with `Cache-Control: no-store` like every console page.

The sinks are the ones the deployment configures for its watchdog (`TICKWHEEL_WATCHDOG_WEBHOOKS`
and its secret, read here from the API process's own environment, which `tickwheel stack` and
the Helm chart share between services). A test delivery is one signed attempt by the
watchdog's own `WebhookSink` (same signature, same SSRF guard), of a body typed `alert.test`,
with a `webhook-id` of its own, so a receiver can tell it from an incident.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.errors import InvalidInput
from tickwheel.records import ApiKey
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.render import error_page, one, page, read_form, see_other
from tickwheel.services.api.problems import from_exception
from tickwheel.services.webhooks import (
    WebhookSink,
    alert_webhook_networks,
    alert_webhook_secret,
    alert_webhook_urls,
    sink_guard,
)

router = APIRouter(include_in_schema=False)


def _backend(request: Request) -> Backend:
    value: Backend = console_backend(request)
    return value


def sinks() -> tuple[list[dict[str, Any]], str | None]:
    """The configured sinks (url, name; never the secret), or why they cannot be read."""
    try:
        urls = alert_webhook_urls()
        sink_guard(urls, alert_webhook_networks())
    except InvalidInput as exc:
        return [], f"the webhook settings are refused: {exc}"
    from hashlib import sha256

    found = [{"url": url, "name": sha256(url.encode()).hexdigest()[:12]} for url in urls]
    return found, None


def test_body(b: Backend, webhook_id: str) -> str:
    """A Standard Webhooks body like an incident's, typed `alert.test`."""
    from tickwheel.core.timefmt import format_utc

    now = b.now_ms()
    data = {
        "alert_id": webhook_id,
        "event_time": now,
        "kind": "test",
        "severity": "info",
        "job_id": None,
        "tenant_id": None,
        "message": "a test delivery from the tickwheel console",
        "evidence": {},
    }
    return json.dumps({"type": "alert.test", "timestamp": format_utc(now), "data": data})


def send_test(b: Backend, name: str) -> tuple[str, str]:
    """One signed attempt to the sink named `name`: (outcome, detail)."""
    found = {s["name"]: s["url"] for s in sinks()[0]}
    if name not in found:
        raise InvalidInput("sink", f"{name!r}; accepted: a sink the admin page lists")
    guard = sink_guard(alert_webhook_urls(), alert_webhook_networks())
    sink = WebhookSink(found[name], alert_webhook_secret(), guard, b.clock)
    webhook_id = f"test-{uuid.uuid4()}"
    outcome, detail = sink.send(webhook_id, test_body(b, webhook_id))
    return outcome, f"{detail} (webhook-id {webhook_id})"


def admin_context(b: Backend) -> dict[str, Any]:
    from tickwheel.services.api.keys import SCOPES, list_keys

    found, problem = sinks()
    return {
        "section": "admin",
        "keys": list_keys(b.bootstrap),
        "scopes": SCOPES,
        "sinks": found,
        "problems": [problem] if problem else [],
    }


def render_admin(request: Request, b: Backend, status: int = 200, **extra: Any) -> Response:
    context = admin_context(b)
    context.update(extra)
    return page(request, "admin.html", context, status=status)


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request) -> Response:
    b = _backend(request)
    try:
        return await run_in_threadpool(render_admin, request, b)
    except Exception as exc:
        return error_page(request, exc, "admin")


def _issue(b: Backend, form: dict[str, list[str]]) -> tuple[str, ApiKey]:
    from tickwheel.services.api.keys import create_key

    tenant = one(form, "tenant").strip()
    scopes = [s for s in form.get("scope", []) if s]
    if not scopes:
        raise InvalidInput(
            "scope", "none ticked; accepted: one or more of read, write, admin, approve"
        )
    description = one(form, "description").strip() or None
    if description is not None and len(description) > 200:
        raise InvalidInput("description", f"{len(description)} characters; accepted: 1-200")
    return create_key(tenant, scopes, description, bootstrap=b.bootstrap, now_ms=b.now_ms())


@router.post("/admin/keys")
async def issue_key(request: Request) -> Response:
    b = _backend(request)
    form = await read_form(request)
    try:
        token, record = await run_in_threadpool(_issue, b, form)
    except Exception as exc:
        problem = from_exception(exc)
        if problem.status >= 500:
            return error_page(request, exc, "admin")
        return await run_in_threadpool(
            render_admin, request, b, problem.status, error=problem.detail
        )
    return await run_in_threadpool(render_admin, request, b, 201, issued={"token": token, **record})


@router.post("/admin/keys/{key_id}/revoke")
async def revoke(request: Request, key_id: str) -> Response:
    from tickwheel.services.api.keys import revoke_key

    b = _backend(request)
    await read_form(request)
    try:
        await run_in_threadpool(
            lambda: revoke_key(key_id, bootstrap=b.bootstrap, now_ms=b.now_ms())
        )
    except Exception as exc:
        return error_page(request, exc, "admin")
    return see_other("/admin", f"revoked key {key_id} (refused by the API within 2 s)")


@router.post("/admin/webhooks/{name}/test")
async def test_delivery(request: Request, name: str) -> Response:
    b = _backend(request)
    await read_form(request)
    try:
        outcome, detail = await run_in_threadpool(send_test, b, name)
    except Exception as exc:
        return error_page(request, exc, "admin")
    return see_other("/admin", f"test delivery to sink {name}: {outcome} {detail}")
