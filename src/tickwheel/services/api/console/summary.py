"""The overview page's model: problems first (open alerts, overdue and broken jobs), then the
history's figures (p99 fire lag over the last hour, the oldest ready execution, the oldest
dead letter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tickwheel.services.api.console import reads
from tickwheel.services.api.console.models import JobRow, approx_duration

SEVERITY_ORDER = ("critical", "error", "warning", "info")


def overview_model(
    now_ms: int, rows: Sequence[JobRow], found: Sequence[dict[str, Any]], h: reads.History
) -> dict[str, Any]:
    open_alerts = [i for i in found if i.get("state") == "open"]
    open_alerts.sort(key=lambda i: (_severity_rank(i.get("severity")), i.get("opened_at") or 0))
    needing = [r for r in rows if r.status in ("broken", "overdue", "late")]
    needing.sort(key=lambda r: (r.rank, r.job_id))
    lateness = reads.fire_lateness(h, now_ms)
    p99 = max((int(r["p99_ms"]) for r in lateness), default=None)
    fired = sum(int(r["occurrences"]) for r in lateness)
    waiting = [e for e in reads.open_executions(h, now_ms) if e.get("last_event") == "requested"]
    oldest_ready = max(waiting, key=lambda e: int(e["open_for_s"]), default=None)
    letters = reads.dead_letters(h, limit=1000)
    oldest_letter_ms = min(
        (m for m in (reads.to_ms(x["event_time"]) for x in letters) if m is not None),
        default=None,
    )
    return {
        "open_alerts": open_alerts,
        "needing": needing,
        "job_count": len(rows),
        "paused_count": sum(1 for r in rows if r.status in ("paused", "disabled")),
        "p99_fire_lag": None if p99 is None else f"{p99} ms",
        "fired_last_hour": fired,
        "ready_waiting": len(waiting),
        "oldest_ready": None
        if oldest_ready is None
        else {
            "age": approx_duration(int(oldest_ready["open_for_s"]) * 1000),
            "execution_id": oldest_ready["execution_id"],
            "job_id": oldest_ready["job_id"],
        },
        "dead_letter_count": len(letters),
        "oldest_dead_letter": None
        if oldest_letter_ms is None
        else approx_duration(now_ms - oldest_letter_ms),
    }


def _severity_rank(severity: object) -> int:
    text = str(severity or "").lower()
    return SEVERITY_ORDER.index(text) if text in SEVERITY_ORDER else len(SEVERITY_ORDER)
