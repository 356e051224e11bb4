"""Execution events to write into a real embedded chDB for the console's pages and queries,
and the store handed to a page as its reader (the console tests on chDB and
`bench/bench_console.py` share them)."""

from __future__ import annotations

from typing import Any

from tickwheel.adapters.clickhouse import ChdbHistoryStore


class KeptOpen:
    """The store as a page's reader: the page closes its reader, the caller keeps the store."""

    def __init__(self, store: ChdbHistoryStore) -> None:
        self.store = store

    def query(self, sql: str, params: Any = None) -> Any:
        return self.store.query(sql, params)

    def close(self) -> None:
        pass


def execution_event(
    job_id: str, execution_id: str, kind: str, slot: int, at: int, *, attempt: int = 1
) -> dict[str, Any]:
    """An `ExecutionEvent` of a `noop` job, as the history sink reads it (a request names the
    `scheduled` trigger); its id is unique per execution, kind and attempt."""
    return {"event_id": f"{kind}-{execution_id}-{attempt}", "event_time": at,
            "event_type": kind, "job_id": job_id, "job_type": "noop", "tenant_id": "default",
            "execution_id": execution_id, "attempt": attempt, "scheduled_time": slot,
            "fire_time": slot, "worker_id": "w", "lease_deadline": None, "error_kind": None,
            "error": None, "reason": "scheduled" if kind == "requested" else None,
            "details": "{}"}  # fmt: skip
