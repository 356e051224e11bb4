"""The overview page's model: problems first (open alerts, overdue and broken jobs), then the
history's figures (p99 fire lag over the last hour, the oldest ready execution per priority,
the oldest unresolved dead letter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tickwheel.services.api.console import reads
from tickwheel.services.api.console.models import JobRow, approx_duration

SEVERITY_ORDER = ("critical", "error", "warning", "info")


def overview_model(
    now_ms: int,
    rows: Sequence[JobRow],
    found: Sequence[dict[str, Any]],
    h: reads.History,
    letters: Sequence[dict[str, Any]] = (),
    operator: bool = True,
) -> dict[str, Any]:
    """`letters` are the dead letters with their resolutions: only unresolved ones count. The
    fleet's figures (fire lag, ready work, the operations panel) are the operators' alone:
    they span every tenant's jobs."""
    open_alerts = [i for i in found if i.get("state") == "open"]
    open_alerts.sort(key=lambda i: (_severity_rank(i.get("severity")), i.get("opened_at") or 0))
    needing = [r for r in rows if r.status in ("broken", "overdue", "late")]
    needing.sort(key=lambda r: (r.rank, r.job_id))
    lateness = reads.fire_lateness(h, now_ms) if operator else []
    p99 = max((int(r["p99_ms"]) for r in lateness), default=None)
    fired = sum(int(r["occurrences"]) for r in lateness)
    ready = []
    for row in reads.ready_by_priority(h, now_ms) if operator else []:
        oldest = reads.to_ms(row["oldest_requested_at"])
        ready.append(
            {
                "priority": row["priority"],
                "waiting": int(row["waiting"]),
                "age": approx_duration(now_ms - oldest) if oldest is not None else "?",
                "execution_id": row["oldest_execution_id"],
                "job_id": row["oldest_job_id"],
            }
        )
    unresolved = [x for x in letters if not x.get("resolution")]
    oldest_letter_ms = min((int(x["event_time"]) for x in unresolved), default=None)
    return {
        "operator": operator,
        "open_alerts": open_alerts,
        "needing": needing,
        "job_count": len(rows),
        "paused_count": sum(1 for r in rows if r.status in ("paused", "disabled")),
        "p99_fire_lag": None if p99 is None else f"{p99} ms",
        "fired_last_hour": fired,
        "ready": ready,
        "dead_letter_count": len(unresolved),
        "oldest_dead_letter": None
        if oldest_letter_ms is None
        else approx_duration(now_ms - oldest_letter_ms),
    }


def _severity_rank(severity: object) -> int:
    text = str(severity or "").lower()
    return SEVERITY_ORDER.index(text) if text in SEVERITY_ORDER else len(SEVERITY_ORDER)
