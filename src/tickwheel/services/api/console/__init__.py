"""The web console: server-rendered pages served by the API process under `/console`.

`mount(app)` adds the pages, the actions and the static files (the console's CSS, and htmx
copied from `services/console/node_modules` by `make setup`) to the API's application.
Decisions 0065-0067 say why it is built this way.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from tickwheel.services.api.console.render import PREFIX, STATIC

__all__ = ["PREFIX", "mount"]


def mount(app: FastAPI) -> None:
    """Serve the console from `app` (pages at /console, files at /console/static)."""
    from tickwheel.services.api.console import actions, pages, reads

    # Where the alerts page reads incidents; a unit test sets its own before the first request.
    app.state.console_alerts = reads.topic_incidents
    app.include_router(pages.router, prefix=PREFIX)
    app.include_router(actions.router, prefix=PREFIX)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="console-static")

    @app.get(f"{PREFIX}/", include_in_schema=False)
    def slash() -> RedirectResponse:
        return RedirectResponse(PREFIX, status_code=308)
