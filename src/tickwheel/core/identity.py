"""Stable identity of an occurrence.

`execution_id` is a UUIDv5 over `(job_id, version, scheduled UTC instant)`: identical on
every attempt, every restart and every timer instance, and handed to the job as its
idempotency key. The name hashed is length-prefixed so no two different triples can
produce the same name, and is spelled out here so any client can recompute it:

    name = f"v1:{len(job_id.encode('utf-8'))}:{job_id}:{version}:{scheduled_ms}"
    execution_id = uuid5(EXECUTION_NAMESPACE, name)
"""

from __future__ import annotations

import hashlib
import uuid

# uuid5(NAMESPACE_URL, "https://github.com/tickwheel/tickwheel/execution-id/v1"), fixed
# forever: changing it would give every past occurrence a new identity.
EXECUTION_NAMESPACE = uuid.UUID("9495675f-a561-57e0-998d-f0bc9827799d")


def execution_name(job_id: str, version: int, scheduled_ms: int) -> str:
    """The UUIDv5 name string hashed for an occurrence (see the module docstring)."""
    return f"v1:{len(job_id.encode('utf-8'))}:{job_id}:{int(version)}:{int(scheduled_ms)}"


# SHA-1 already fed the namespace: each id hashes only its name (a copy is cheaper).
_NAMESPACE_SHA1 = hashlib.sha1(EXECUTION_NAMESPACE.bytes, usedforsecurity=False)


# The hex digit that starts the fourth group, by the digest's digit there (RFC 4122 variant).
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def execution_id(job_id: str, version: int, scheduled_ms: int) -> str:
    """The deterministic execution id (UUIDv5 string) of occurrence (job, version, slot).

    Exactly `str(uuid.uuid5(EXECUTION_NAMESPACE, name))`, spelled out because the timer makes
    one per occurrence and `uuid.uuid5` costs three times as much (the tests hold them equal).
    """
    sha1 = _NAMESPACE_SHA1.copy()
    sha1.update(execution_name(job_id, version, scheduled_ms).encode())
    text = sha1.hexdigest()
    # The version nibble is 5; the variant keeps the digit's two low bits under 0b10.
    return f"{text[:8]}-{text[8:12]}-5{text[13:16]}-{_VARIANT[text[16]]}{text[17:20]}-{text[20:32]}"
