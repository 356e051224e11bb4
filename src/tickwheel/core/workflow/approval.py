"""Approval tokens: a signed, expiring, single-use link to one round of one approval step.

A token is `v1.<kid>.<body>.<mac>`: `body` is the URL-safe base64 of the JSON
`{"w": workflow_id, "s": step_id, "r": round, "e": expires_at_ms}` and `mac` the URL-safe
base64 of HMAC-SHA256 over `v1.<kid>.<body>` with the secret named by key id `kid`, so keys
rotate (sign with the new one, keep verifying with the old until its tokens expired).

Pure: the caller passes the keys and `now_ms`. *Single-use* and *round* are the fold's:
a token names its round, and once that round is decided (or replaced by an escalation or a
reassignment) every later decision for it is recorded as `approval_fenced`, never applied.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass

from tickwheel.errors import InvalidInput

__all__ = ["ApprovalClaim", "sign_approval", "verify_approval"]

_VERSION = "v1"


@dataclass(frozen=True, slots=True)
class ApprovalClaim:
    """What a valid token entitles its holder to decide."""

    workflow_id: str
    step: str
    round: int
    expires_at_ms: int


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, signed: str) -> str:
    return _b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())


def sign_approval(claim: ApprovalClaim, kid: str, secret: bytes) -> str:
    """The token for `claim`, signed with key `kid`."""
    if not kid or "." in kid:
        raise InvalidInput("kid", f"{kid!r}; accepted: a non-empty key id without '.'")
    body = _b64(
        json.dumps(
            {"w": claim.workflow_id, "s": claim.step, "r": claim.round, "e": claim.expires_at_ms},
            separators=(",", ":"),
        ).encode()
    )
    signed = f"{_VERSION}.{kid}.{body}"
    return f"{signed}.{_mac(secret, signed)}"


def verify_approval(token: str, keys: Mapping[str, bytes], now_ms: int) -> ApprovalClaim:
    """The claim of a genuine, unexpired token; `InvalidInput` (field `token`) saying why not."""
    parts = token.strip().split(".")
    if len(parts) != 4 or parts[0] != _VERSION:
        raise InvalidInput("token", "not an approval token; accepted: v1.<kid>.<body>.<mac>")
    _, kid, body, mac = parts
    secret = keys.get(kid)
    if secret is None:
        raise InvalidInput("token", f"signed with key {kid!r}, which is not (or no longer) known")
    if not hmac.compare_digest(_mac(secret, f"{_VERSION}.{kid}.{body}"), mac):
        raise InvalidInput("token", "the signature does not match: the token was altered")
    try:
        data = json.loads(_unb64(body))
        claim = ApprovalClaim(str(data["w"]), str(data["s"]), int(data["r"]), int(data["e"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput("token", f"its body does not decode ({exc})") from exc
    if now_ms >= claim.expires_at_ms:
        raise InvalidInput("token", f"expired at {claim.expires_at_ms} (epoch ms)")
    return claim
