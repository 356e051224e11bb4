"""The web console: server-rendered pages served by the API process under `/console`.

`mount(app)` adds the pages, the actions and the static files (the console's CSS, and htmx
copied from `services/console/node_modules` by `make setup`) to the API's application.
Decisions 0065-0067 say why it is built this way.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from tickwheel.services.api.console import access
from tickwheel.services.api.console.access import ConsoleLocked, same_origin
from tickwheel.services.api.console.render import PREFIX, STATIC, page

__all__ = ["PREFIX", "mount"]


def console_allowed(request: Request) -> None:
    """Who the request acts for (decision 0103): with `TICKWHEEL_API_AUTH=off` the single
    operator on loopback, every tenant and scope; otherwise the key signed in on the console's
    cookie, narrowed to its tenant and checked for the scope the request needs. A change must
    come from the console's own pages: a cross-site form is refused either way."""
    from tickwheel.services.api.door import auth_mode

    mode = auth_mode()
    if request.method != "GET" and not same_origin(request):
        raise ConsoleLocked("cross-site")
    principal = access.authenticate(request, mode)
    if principal is None:
        raise access.SignInNeeded()
    path = request.url.path.removeprefix(PREFIX)
    scope = access.console_scope(request.method, path)
    if not principal.can(scope):
        raise ConsoleLocked(
            f"this key lacks the {scope!r} scope this page needs; accepted: "
            f"a key with it (this one has {sorted(principal.scopes)})"
        )
    base = request.app.state.backend
    b = access.scoped_backend(base, principal, mode)
    if path.startswith(access.OPERATORS_ONLY) and not access.is_operator(b):
        raise ConsoleLocked(
            "this page shows every tenant's keys and the cluster: it is the "
            "operators' (the tenant `default`); accepted: a key of that tenant"
        )
    request.state.principal = principal
    request.state.console_backend = b


def _locked(request: Request, exc: Exception) -> HTMLResponse:
    if str(exc) == "cross-site":
        detail = "a change to the console must be posted from its own pages (this came from another site)"
    else:
        detail = str(exc)
    context = {"section": "", "status": 403, "title": "console-locked", "detail": detail}
    return page(request, "error.html", context, status=403)


def _sign_in_needed(request: Request, exc: Exception) -> Response:
    if request.method == "GET":
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/sign-in?{urlencode({'next': target})}", status_code=303)
    context = {
        "section": "",
        "status": 401,
        "title": "sign-in-needed",
        "detail": "sign in with an API key first (the console's sign-in page)",
    }
    return page(request, "error.html", context, status=401)


def mount(app: FastAPI) -> None:
    """Serve the console from `app` (pages at /console, files at /console/static)."""
    from tickwheel.services.api.console import (
        actions,
        admin,
        alerts,
        dead_letters,
        execution_actions,
        operations,
        pages,
        reads,
        sign_in,
        workflows,
    )

    # Where the alerts page reads incidents; a unit test sets its own before the first request.
    app.state.console_alerts = reads.topic_incidents
    app.state.console_workflows = workflows.sdk_workflows
    app.state.console_ack = alerts.send_ack
    app.state.console_disabled = alerts.topic_disabled
    app.state.console_dead_letters = dead_letters.topic_letters
    app.state.console_operations = operations.read_operations
    guard = [Depends(console_allowed)]
    app.include_router(pages.router, prefix=PREFIX, dependencies=guard)
    app.include_router(actions.router, prefix=PREFIX, dependencies=guard)
    app.include_router(workflows.router, prefix=PREFIX, dependencies=guard)
    app.include_router(alerts.router, prefix=PREFIX, dependencies=guard)
    app.include_router(dead_letters.router, prefix=PREFIX, dependencies=guard)
    app.include_router(execution_actions.router, prefix=PREFIX, dependencies=guard)
    app.include_router(operations.router, prefix=PREFIX, dependencies=guard)
    app.include_router(admin.router, prefix=PREFIX, dependencies=guard)
    app.include_router(sign_in.router, prefix=PREFIX)
    app.add_exception_handler(ConsoleLocked, _locked)
    app.add_exception_handler(access.SignInNeeded, _sign_in_needed)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="console-static")

    @app.get(f"{PREFIX}/", include_in_schema=False)
    def slash() -> RedirectResponse:
        return RedirectResponse(PREFIX, status_code=308)
