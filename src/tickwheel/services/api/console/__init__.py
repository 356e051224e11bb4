"""The web console: server-rendered pages served by the API process under `/console`.

`mount(app)` adds the pages, the actions and the static files (the console's CSS, and htmx
copied from `services/console/node_modules` by `make setup`) to the API's application.
Decisions 0065-0067 say why it is built this way.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from tickwheel.services.api.console.render import PREFIX, STATIC, page

__all__ = ["PREFIX", "ConsoleLocked", "mount"]


class ConsoleLocked(Exception):
    """The console has no sign-in yet, so it serves only the API's development mode."""


def console_allowed(request: Request) -> None:
    """The console acts for every tenant with every scope and asks for no key, so it is
    served only where the API asks for none either: `TICKWHEEL_API_AUTH=off`, which the API
    accepts on loopback only (decision 0066). A change must come from the console's own pages:
    a cross-site form posted by another page the operator has open is refused."""
    if os.environ.get("TICKWHEEL_API_AUTH", "keys") != "off":
        raise ConsoleLocked("no sign-in")
    if request.method != "GET" and not same_origin(request):
        raise ConsoleLocked("cross-site")


def same_origin(request: Request) -> bool:
    """True unless the browser says the request comes from another site (`Sec-Fetch-Site`)
    or names another origin (`Origin`); a client that sends neither (curl) is let through."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _locked(request: Request, exc: Exception) -> HTMLResponse:
    if str(exc) == "cross-site":
        detail = "a change to the console must be posted from its own pages (this came from another site)"
    else:
        detail = ("the console has no sign-in yet; it is served when the API runs in its "
                  "development mode (TICKWHEEL_API_AUTH=off, loopback only)")  # fmt: skip
    context = {"section": "", "status": 403, "title": "console-locked", "detail": detail}
    return page(request, "error.html", context, status=403)


def mount(app: FastAPI) -> None:
    """Serve the console from `app` (pages at /console, files at /console/static)."""
    from tickwheel.services.api.console import (
        actions,
        alerts,
        dead_letters,
        execution_actions,
        operations,
        pages,
        reads,
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
    app.add_exception_handler(ConsoleLocked, _locked)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="console-static")

    @app.get(f"{PREFIX}/", include_in_schema=False)
    def slash() -> RedirectResponse:
        return RedirectResponse(PREFIX, status_code=308)
