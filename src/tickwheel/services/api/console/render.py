"""Rendering a console page: the Jinja2 environment, the page response, the error page.

Pages are complete HTML documents that read without JavaScript; htmx (served from
`/console/static`, pinned by `services/console/package-lock.json`) only refreshes parts of
them. Every page is sent with a Content-Security-Policy that allows this origin alone, so a
page that tried to load anything from elsewhere would be refused by the browser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from tickwheel.core.timefmt import format_utc
from tickwheel.errors import InvalidInput
from tickwheel.services.api.problems import from_exception

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
PREFIX = "/console"
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'"
)
#: The largest form body the console reads (a bulk action over many jobs stays far below).
MAX_FORM_BYTES = 1_000_000

env = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.globals["prefix"] = PREFIX
env.filters["utc"] = lambda ms: format_utc(int(ms)) if isinstance(ms, int | float) else str(ms)
env.filters["tojson_compact"] = lambda value: json.dumps(value, sort_keys=True, default=str)

NAV = (
    ("overview", "Overview", ""),
    ("jobs", "Jobs", "/jobs"),
    ("workflows", "Workflows", "/workflows"),
    ("alerts", "Alerts", "/alerts"),
    ("dead-letters", "Dead letters", "/dead-letters"),
    ("admin", "Admin", "/admin"),
)
env.globals["nav"] = NAV


def page(
    request: Request, template: str, context: Mapping[str, Any], status: int = 200
) -> HTMLResponse:
    """A rendered page with the console's headers."""
    body = env.get_template(template).render(
        request=request, flash=request.query_params.get("done"), **context
    )
    return HTMLResponse(body, status_code=status, headers=headers())


def headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def error_page(request: Request, exc: Exception, section: str = "") -> HTMLResponse:
    """What went wrong as a page: the API's problem (status, one line), never a traceback."""
    problem = from_exception(exc)
    if isinstance(exc, LookupError) and problem.status == 422:
        problem.status, problem.code = 404, "not-found"  # an unknown alert, workflow, ...
    context = {
        "section": section,
        "status": problem.status,
        "detail": problem.detail,
        "title": problem.code,
    }
    return page(request, "error.html", context, status=problem.status)


def see_other(path: str, done: str | None = None) -> RedirectResponse:
    """Post/redirect/get: after an action, the page it acted on, with what was done."""
    target = PREFIX + path
    if done:
        target += ("&" if "?" in target else "?") + urlencode({"done": done})
    return RedirectResponse(target, status_code=303, headers=headers())


async def read_form(request: Request) -> dict[str, list[str]]:
    """An `application/x-www-form-urlencoded` body (what a plain HTML form posts)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    body = await request.body()
    if not body:
        return {}  # a form with no field (a bare button) may come with no content type
    if kind != "application/x-www-form-urlencoded":
        raise InvalidInput(
            "content-type", f"{kind or 'none'}; accepted: application/x-www-form-urlencoded"
        )
    if len(body) > MAX_FORM_BYTES:
        raise InvalidInput("body", f"{len(body)} bytes; accepted: at most {MAX_FORM_BYTES}")
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)


def one(form: Mapping[str, list[str]], name: str, default: str = "") -> str:
    values = form.get(name) or [default]
    return values[0]
