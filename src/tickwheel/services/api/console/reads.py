"""What the console reads, through the readers that exist: the API's `Backend` (the SDK's job
client), the history (`tickwheel.history`: the audit, the timeline, documented queries) and
the `alerts` topic (as `tickwheel alerts` reads it). Nothing here writes.

The history is optional for a page: when no history store answers, a page still lists the
jobs and says that the history is unavailable, rather than failing whole.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwheel.history import (
    HistoryReader,
    execution_timeline,
    run_query,
)
from tickwheel.history._audit import AuditedWindow, audit_window
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.models import JobOutcome

log = logging.getLogger("tickwheel.api.console")
QUERIES = Path(__file__).parent / "queries"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        if value <= _EPOCH:
            return None  # ClickHouse's maxIf over no row: the epoch, meaning "none"
        ms: int = (value - _EPOCH) // dt.timedelta(milliseconds=1)
        return ms
    return int(value)


@dataclass
class History:
    """A history reader for one page, or why there is none."""

    reader: HistoryReader | None
    problem: str | None = None

    def query(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """One of the console's own queries (`console/queries/<name>.sql`)."""
        if self.reader is None:
            return []
        sql = (QUERIES / f"{name}.sql").read_text(encoding="utf-8")
        return self.reader.query(sql, dict(params or {})).as_dicts()


@contextmanager
def history(backend: Backend) -> Iterator[History]:
    """The history for one request; `History(None, why)` when none answers."""
    try:
        reader = backend.open_history()
    except Exception as exc:  # any reason the store is unreachable: the page says so
        log.info(
            "history unavailable",
            extra={"action": "console_history_unavailable", "error": str(exc)},
        )
        yield History(None, f"the history is unavailable ({exc})")
        return
    try:
        yield History(reader)
    finally:
        reader.close()


def job_outcomes(h: History, job_id: str | None = None) -> dict[str, JobOutcome]:
    """Each job's last outcome and success; only `job_id`'s when given (the job page: its
    own job's events, not every job's)."""
    out: dict[str, JobOutcome] = {}
    rows = (
        h.query("console_job_outcomes")
        if job_id is None
        else h.query("console_job_outcome", {"job_id": job_id})
    )
    for row in rows:
        out[row["job_id"]] = JobOutcome(
            last_outcome=row["last_outcome"],
            last_outcome_ms=to_ms(row["last_outcome_time"]),
            last_success_ms=to_ms(row["last_success_time"]) if row["successes"] else None,
        )
    return out


def job_versions(h: History, job_id: str) -> list[dict[str, Any]]:
    if h.reader is None:
        return []
    return run_query(h.reader, "job_definition_versions", {"job_id": job_id}).as_dicts()


def audit(h: History, job_id: str, start_ms: int, end_ms: int) -> AuditedWindow | None:
    """The schedule audit over the window (`schedule_audit`'s slots as values: no ISO text
    per slot, which a month of a per-minute job pays 43,200 times), or None when the history
    cannot say (no store, or no recorded definition of the job yet: the sink has not caught
    up)."""
    if h.reader is None:
        return None
    try:
        return audit_window(h.reader, job_id, start_ms, end_ms)
    except Exception as exc:
        h.problem = f"no occurrence grid yet ({exc})"
        return None


def job_executions(h: History, job_id: str, limit: int = 20) -> list[dict[str, Any]]:
    return h.query("console_executions", {"job_id": job_id, "limit": limit})


def timeline(h: History, execution_id: str) -> dict[str, Any] | None:
    if h.reader is None:
        return None
    return execution_timeline(h.reader, execution_id)


def ready_by_priority(h: History, now_ms: int) -> list[dict[str, Any]]:
    as_of = (_EPOCH + dt.timedelta(milliseconds=now_ms)).isoformat()
    return h.query("console_ready_age", {"as_of": as_of})


def fire_lateness(h: History, now_ms: int, window_ms: int = 3_600_000) -> list[dict[str, Any]]:
    if h.reader is None:
        return []
    since = (_EPOCH + dt.timedelta(milliseconds=now_ms - window_ms)).isoformat()
    until = (_EPOCH + dt.timedelta(milliseconds=now_ms + 1)).isoformat()
    return run_query(h.reader, "fire_lateness", {"since": since, "until": until}).as_dicts()


AlertSource = Callable[[Backend], list[dict[str, Any]]]


def topic_incidents(backend: Backend) -> list[dict[str, Any]]:
    """The watchdog's incidents from the `alerts` topic, folded as `tickwheel alerts list`
    folds them (one entry per incident, its latest state)."""
    from tickwheel.sdk.alerts import incidents as fold
    from tickwheel.sdk.alerts import read_transitions

    return fold(read_transitions(backend.bootstrap))


def incidents(backend: Backend, source: AlertSource) -> tuple[list[dict[str, Any]], str | None]:
    """The incidents `source` reads, or why they cannot be read."""
    from tickwheel.services.api.console.access import owned

    try:
        return owned(backend, source(backend)), None
    except Exception as exc:
        return [], f"the alerts topic is unavailable ({exc})"
