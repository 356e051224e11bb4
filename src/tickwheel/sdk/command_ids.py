"""Job command ids that name their tenant (decision 0166).

The status resource of a 202 (`/v1/job-commands/{id}`) may be asked of any API instance. A
verdict that carries a job names its tenant; one without (a `not_found`, a refused create of
another tenant's id, a delete) does not, and a command not judged yet has no verdict at all.
An id made here carries a digest of itself with its tenant, so an instance can tell from the
id alone whether it is the asker's tenant's, and when it was sent.
"""

from __future__ import annotations

import hashlib
import uuid

TAG_BYTES = 6
# The judge's default command TTL (TICKWHEEL_JOBWRITER_COMMAND_TTL): a command older than
# that when judged is answered `invalid` ("expired"), so no command is pending for longer.
PENDING_AT_MOST_MS = 10 * 60 * 1000
# A command without a tenant is the tenant `default`'s (decision 0068).
UNNAMED_TENANT = "default"


def _tag(tenant_id: str, base: str) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{base}".encode()).hexdigest()[: TAG_BYTES * 2]


def tagged_command_id(tenant_id: str | None, now_ms: int) -> str:
    """A new command id that names its tenant and when it was sent (decision 0166): a random
    UUID, the instant (hex ms) and a digest of both with the tenant. Any instance can tell
    from the id alone whether it is an asker's (no record needed for a verdict without a
    job, or a command not judged yet); the UUID keeps it unguessable."""
    base = f"{uuid.uuid4()}.{now_ms:x}"
    return f"{base}.{_tag(tenant_id or UNNAMED_TENANT, base)}"


def command_sent_at(command_id: str, tenant_id: str) -> int | None:
    """When a tagged command id of `tenant_id` was made (epoch ms); None when the id is not
    one (untagged, malformed, or another tenant's)."""
    base, _, tag = command_id.rpartition(".")
    _, _, sent_hex = base.rpartition(".")
    if not base or len(tag) != TAG_BYTES * 2 or _tag(tenant_id, base) != tag:
        return None
    try:
        return int(sent_hex, 16)
    except ValueError:
        return None
