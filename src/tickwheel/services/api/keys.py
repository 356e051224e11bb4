"""API keys: issued here, stored hashed in `api.keys`, checked by the API (decision 0068).

A token reads `tw_<key id>_<secret>_<check>`: the `tw_` prefix lets secret scanners find a
leaked one, the key id (public) finds its record, the secret is 256 random bits, and the
check (CRC-32 of the rest) refuses a mistyped token without a look-up. The record holds the
SHA-256 of the whole token, never the token: a fast hash suffices for a 256-bit secret.

    tickwheel api-keys create --tenant acme --scope read --scope write
    tickwheel api-keys list
    tickwheel api-keys revoke KEY_ID

(the verbs are `tickwheel.cli.api_keys`'s; the console's admin page calls the same functions).

Rotation is issuing a new key for the tenant, moving clients to it, then revoking the old one:
a tenant may hold any number of active keys.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.records import ApiKey

if TYPE_CHECKING:
    from tickwheel.services.api.topic_view import TopicView

SCOPES = ("read", "write", "admin", "approve")
# What each scope also grants: a writer may read, an admin may write and read.
IMPLIED = {
    "read": {"read"},
    "write": {"write", "read"},
    "admin": {"admin", "write", "read"},
    "approve": {"approve", "read"},
}
DEFAULT_TENANT = "default"
TENANT_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_TOKEN = re.compile(r"tw_([0-9a-f]{16})_([A-Za-z0-9_-]{43})_([0-9a-f]{8})")


class UnknownKey(TickwheelError, LookupError):
    """No API key has this id."""


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: a tenant, the key used (None in the development mode), and the
    scopes granted (with what they imply)."""

    tenant_id: str
    key_id: str | None
    scopes: frozenset[str]

    def can(self, scope: str) -> bool:
        return scope in self.scopes


def granted(scopes: Iterable[str]) -> frozenset[str]:
    return frozenset(s for scope in scopes for s in IMPLIED.get(scope, ()))


def _check(body: str) -> str:
    return f"{zlib.crc32(body.encode()):08x}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_token(token: str) -> str | None:
    """The key id of a well-formed token whose check matches, else None."""
    match = _TOKEN.fullmatch(token)
    if match is None:
        return None
    body = token[: -len(match.group(3)) - 1]
    return match.group(1) if hmac.compare_digest(_check(body), match.group(3)) else None


def validate_scopes(scopes: Sequence[str]) -> list[str]:
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise InvalidInput("scope", f"{unknown or 'none'}; accepted: one or more of {SCOPES}")
    return sorted(set(scopes))


def check_tenant(tenant_id: str) -> str:
    if not TENANT_PATTERN.fullmatch(tenant_id):
        raise InvalidInput(
            "tenant", f"{tenant_id!r}; accepted: 1-63 of a-z 0-9 . _ -, starting alphanumeric"
        )
    return tenant_id


def new_key(
    tenant_id: str,
    scopes: Sequence[str],
    now_ms: int,
    description: str | None = None,
    token_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> tuple[str, ApiKey]:
    """A fresh token and the `ApiKey` record to store for it (which holds only its hash)."""
    check_tenant(tenant_id)
    key_id = token_bytes(8).hex()
    secret = base64.urlsafe_b64encode(token_bytes(32)).decode().rstrip("=")
    body = f"tw_{key_id}_{secret}"
    token = f"{body}_{_check(body)}"
    record: ApiKey = {
        "key_id": key_id,
        "tenant_id": tenant_id,
        "scopes": validate_scopes(scopes),
        "secret_sha256": token_hash(token),
        "created_at": now_ms,
        "revoked_at": None,
        "description": description,
    }
    return token, record


class KeyRing:
    """Authenticates tokens against the `api.keys` view. An unknown key id makes the view read
    the topic again (at most once a second), so a key issued a moment ago works at once."""

    def __init__(self, view: TopicView[ApiKey], monotonic: Callable[[], float]) -> None:
        self.view = view
        self._monotonic = monotonic
        self._last_miss_refresh = -1e9

    def authenticate(self, token: str) -> Principal | None:
        key_id = parse_token(token)
        if key_id is None:
            return None
        record = self.view.get(key_id)
        if record is None and self._monotonic() - self._last_miss_refresh >= 1.0:
            self._last_miss_refresh = self._monotonic()
            self.view.refresh()
            record = self.view.get(key_id)
        if record is None or record.get("revoked_at") is not None:
            return None
        if not hmac.compare_digest(record["secret_sha256"], token_hash(token)):
            return None
        return Principal(record["tenant_id"], key_id, granted(record["scopes"]))


def open_key_view(bootstrap: str | None = None) -> TopicView[ApiKey]:
    from tickwheel.services.api.topic_view import TopicView

    return TopicView("api.keys", ApiKey, bootstrap)


def create_key(
    tenant_id: str,
    scopes: Sequence[str],
    description: str | None = None,
    *,
    bootstrap: str | None = None,
    now_ms: int,
) -> tuple[str, ApiKey]:
    """Issue a key and store its record; returns the token (shown once) and the record."""
    token, record = new_key(tenant_id, scopes, now_ms, description)
    open_key_view(bootstrap).publish(record["key_id"], record)
    return token, record


def revoke_key(key_id: str, *, bootstrap: str | None = None, now_ms: int) -> ApiKey:
    view = open_key_view(bootstrap)
    view.refresh()
    record = view.get(key_id)
    if record is None:
        raise UnknownKey(f"no API key {key_id!r}; accepted: a key id that `list` shows")
    revoked = record.copy()
    revoked["revoked_at"] = record["revoked_at"] or now_ms
    view.publish(key_id, revoked)
    return revoked


def list_keys(bootstrap: str | None = None) -> list[ApiKey]:
    view = open_key_view(bootstrap)
    view.refresh()
    return sorted(view.values(), key=lambda r: (r["tenant_id"], r["created_at"], r["key_id"]))
