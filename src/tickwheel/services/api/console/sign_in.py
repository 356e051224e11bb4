"""Signing in to the console with an API key, and out (decision 0103).

The key is checked by the API's key ring and kept in an `HttpOnly`, `SameSite=Strict` cookie
scoped to `/console`: page scripts cannot read it and no other site's request carries it. In
the development mode (`TICKWHEEL_API_AUTH=off`) there is nothing to sign in to.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tickwheel.services.api.console.access import COOKIE, ConsoleLocked, key_principal, same_origin
from tickwheel.services.api.console.render import PREFIX, headers, one, page, read_form

router = APIRouter(include_in_schema=False)


def _next(target: str) -> str:
    """Where to go after signing in: a console path, never another site."""
    return target if target.startswith(PREFIX) and not target.startswith("//") else PREFIX


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(request: Request) -> Response:
    from tickwheel.services.api.door import auth_mode

    context = {
        "section": "",
        "next": _next(request.query_params.get("next", PREFIX)),
        "development": auth_mode() == "off",
    }
    return page(request, "sign_in.html", context)


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    from tickwheel.services.api.door import auth_mode

    if not same_origin(request):
        raise ConsoleLocked("cross-site")
    form = await read_form(request)
    token = one(form, "key").strip()
    target = _next(one(form, "next", PREFIX))
    principal = key_principal(request, token) if auth_mode() == "keys" else None
    if principal is None:
        context = {
            "section": "",
            "next": target,
            "development": auth_mode() == "off",
            "error": "that key is not valid (unknown, revoked or mistyped); accepted: "
            "a token `tickwheel api-keys create` printed",
        }
        return page(request, "sign_in.html", context, status=401)
    response = RedirectResponse(target, status_code=303, headers=headers())
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        path=PREFIX,
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:

    if not same_origin(request):
        raise ConsoleLocked("cross-site")
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303, headers=headers())
    response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
    return response
