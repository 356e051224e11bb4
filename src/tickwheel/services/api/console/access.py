"""Who is using the console, and what they may see (decision 0103, amending 0066).

- `TICKWHEEL_API_AUTH=off` (the loopback development mode): the operator acts for every
  tenant with every scope, as before; no sign-in.
- `TICKWHEEL_API_AUTH=keys`: the console asks for an API key on its sign-in page and keeps it
  in a cookie (`HttpOnly`, `SameSite=Strict`, `Path=/console`, `Secure` over https). Each
  request is authenticated by the API's own key ring (a revoked key stops working within its
  2 s), and acts for the key's tenant: its jobs (the API's `TenantJobs`), its executions (those
  of its jobs), its workflows (the API's `TenantWorkflows`), its alerts and its dead letters.
  A page needs the `read` scope, a change `write`, a dead-letter change and the admin page
  `admin`, an approval `approve`; the admin and operations pages (every tenant's keys, the
  cluster's partitions and groups) are the tenant `default`'s alone.

Cross-site changes stay refused (`Sec-Fetch-Site`, `Origin`): with a `SameSite=Strict` cookie a
form posted from another site carries no key anyway.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request

from tickwheel.services.api.backend import Backend
from tickwheel.services.api.keys import DEFAULT_TENANT, Principal
from tickwheel.services.api.tenancy import TenantJobs, owner_of

COOKIE = "tickwheel_console"
#: Console paths (below /console) only the operators' tenant may open.
OPERATORS_ONLY = ("/admin", "/operations")


class SignInNeeded(Exception):
    """No valid key in the console's cookie (keys mode)."""


class ConsoleLocked(Exception):
    """A console request refused: cross-site, or its key lacks the scope or the tenant."""


def same_origin(request: Request) -> bool:
    """True unless the browser says the request comes from another site (`Sec-Fetch-Site`)
    or names another origin (`Origin`); a client that sends neither (curl) is let through."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def console_scope(method: str, path: str) -> str:
    """The scope a console request needs (`path` below the console's prefix)."""
    if method in ("GET", "HEAD"):
        return "admin" if path.startswith("/admin") else "read"
    if path.startswith(("/dead-letters", "/admin")):
        return "admin"
    if path.endswith(("/approve", "/reject")):
        return "approve"
    return "write"


def authenticate(request: Request, mode: str) -> Principal | None:
    """The request's principal: the development one with auth off, else the cookie's key's."""
    from tickwheel.services.api.door import DEV_PRINCIPAL

    if mode == "off":
        return DEV_PRINCIPAL
    return key_principal(request, request.cookies.get(COOKIE))


def key_principal(request: Request, token: str | None) -> Principal | None:
    """The principal of `token` by the API's key ring; None for a bad, revoked or no key."""
    door = getattr(request.app.state, "door", None)
    if not token or door is None or door.keys is None:
        return None
    principal: Principal | None = door.keys.authenticate(token)
    return principal


def scoped_backend(base: Backend, principal: Principal, mode: str) -> Backend:
    """The backend a console request acts through: every tenant's in the development mode
    (the single operator on loopback), else the key's tenant's."""
    if mode == "off":
        return base
    return dataclasses.replace(
        base, jobs=TenantJobs(base.jobs, principal.tenant_id), tenant_id=principal.tenant_id
    )


def console_backend(request: Request) -> Backend:
    """The backend of this console request (set by the console's guard)."""
    value: Backend = getattr(request.state, "console_backend", None) or request.app.state.backend
    return value


def tenant_of(b: Backend) -> str | None:
    """The tenant a scoped backend acts for; None in the development mode (every tenant)."""
    return b.tenant_id


def owned(b: Backend, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The incidents (or anything with a tenant) of the backend's tenant; all when unscoped.
    One without a tenant is the tenant `default`'s."""
    tenant = tenant_of(b)
    return items if tenant is None else [i for i in items if owner_of(i) == tenant]


class ScopedWorkflows:
    """The console's workflow client narrowed to one tenant: another tenant's instance is
    unknown (404) to every read and change, through the API's `TenantWorkflows`."""

    def __init__(self, client: Any, tenant_id: str) -> None:
        from tickwheel.services.api.workflows import TenantWorkflows

        self.client = client
        self.flows = TenantWorkflows(client, tenant_id)

    def get(self, workflow_id: str) -> Any:
        return self.flows.get(workflow_id)

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.flows.list(status)
        return found

    def approve(self, token: str, **kwargs: Any) -> Any:
        self.flows.get(claimed_workflow(token))
        return self.client.approve(token, **kwargs)

    def reject(self, token: str, **kwargs: Any) -> Any:
        self.flows.get(claimed_workflow(token))
        return self.client.reject(token, **kwargs)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        if name == "definitions":
            return method

        def checked(workflow_id: str, *args: Any, **kwargs: Any) -> Any:
            self.flows.get(workflow_id)  # another tenant's: UnknownWorkflow
            return method(workflow_id, *args, **kwargs)

        return checked


def workflows_for(request: Request, client: Any) -> Any:
    b = console_backend(request)
    return client if b.tenant_id is None else ScopedWorkflows(client, b.tenant_id)


def is_operator(b: Backend) -> bool:
    return b.tenant_id in (None, DEFAULT_TENANT)


def claimed_workflow(token: str) -> str:
    """The workflow an approval token names, read without checking its signature (the SDK
    checks it before deciding): a decision takes a token, not a workflow id, and the tenant
    must own the workflow the token is for. "" for what is not a token (then unknown: 404)."""
    parts = token.strip().split(".")
    if len(parts) != 4:
        return ""
    try:
        body = json.loads(base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4)))
        return str(body["w"])
    except (ValueError, KeyError, TypeError):
        return ""
