"""The watchdog's own records on `watchdog.state` (compacted, value schema Alert): the
current incident of each fingerprint, and one checkpoint. Alert v1 carries both, the
incident or the checkpoint as JSON in `details` (decision 0056). The facts it keeps past its
inputs' retention and compaction share the topic: `remembered.py` (decisions 0189, 0190)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tickwheel.core.watchdog import Incident, plain_alert
from tickwheel.records import Alert

CHECKPOINT_KEY = "__checkpoint__"


def incident_record(incident: Incident) -> Alert:
    return plain_alert(
        incident.fingerprint,
        incident.last_transition_at,
        incident.kind,
        incident.severity,
        incident.message,
        job_id=incident.job_id,
        tenant_id=incident.tenant_id,
        details=json.dumps({"incident": incident.to_dict()}, sort_keys=True),
    )


def checkpoint_record(offsets: Mapping[str, int], watermark: int | None, now_ms: int) -> Alert:
    return plain_alert(
        CHECKPOINT_KEY,
        now_ms,
        "watchdog_checkpoint",
        "info",
        "where the watchdog's inputs stood at its last transaction",
        details=json.dumps({"offsets": dict(offsets), "watermark": watermark}, sort_keys=True),
    )


def parse_state_record(record: Alert) -> Incident | tuple[dict[str, int], int | None]:
    """An incident, or a checkpoint's (offsets, watermark)."""
    details = json.loads(record["details"] or "{}")
    if record["alert_id"] == CHECKPOINT_KEY:
        offsets = {str(k): int(v) for k, v in details.get("offsets", {}).items()}
        watermark = details.get("watermark")
        return offsets, None if watermark is None else int(watermark)
    return Incident.from_dict(details["incident"])


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"
