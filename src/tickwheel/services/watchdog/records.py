"""The watchdog's own records on `watchdog.state` (compacted, value schema Alert): the
current incident of each fingerprint, and one checkpoint. Alert v1 carries both, the
incident or the checkpoint as JSON in `details` (decision 0056)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tickwheel.core.watchdog import Incident

CHECKPOINT_KEY = "__checkpoint__"


def incident_record(incident: Incident) -> dict[str, Any]:
    return {
        "alert_id": incident.fingerprint,
        "event_time": incident.last_transition_at,
        "kind": incident.kind,
        "severity": incident.severity,
        "job_id": incident.job_id,
        "tenant_id": incident.tenant_id,
        "message": incident.message,
        "details": json.dumps({"incident": incident.to_dict()}, sort_keys=True),
    }


def checkpoint_record(
    offsets: Mapping[str, int], watermark: int | None, now_ms: int
) -> dict[str, Any]:
    return {
        "alert_id": CHECKPOINT_KEY,
        "event_time": now_ms,
        "kind": "watchdog_checkpoint",
        "severity": "info",
        "job_id": None,
        "tenant_id": None,
        "message": "where the watchdog's inputs stood at its last transaction",
        "details": json.dumps({"offsets": dict(offsets), "watermark": watermark}, sort_keys=True),
    }


def parse_state_record(record: Mapping[str, Any]) -> Incident | tuple[dict[str, int], int | None]:
    """An incident, or a checkpoint's (offsets, watermark)."""
    details = json.loads(record.get("details") or "{}")
    if record["alert_id"] == CHECKPOINT_KEY:
        offsets = {str(k): int(v) for k, v in details.get("offsets", {}).items()}
        watermark = details.get("watermark")
        return offsets, None if watermark is None else int(watermark)
    return Incident.from_dict(details["incident"])


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"
