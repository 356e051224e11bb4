"""Runs the ClickHouse SQL freshness queries jobs declare (`freshness: {"sql": ...}`), for the
evaluator's `output_stale` (decision 0109).

Every `every_ms`, each distinct query runs once on the history store's reader — the same
read-only guard as `tickwheel history sql`: one statement, no writes, no table functions
that reach outside, and the session's caps on rows, bytes and seconds. The first column of
its first row is the newest output time: a `DateTime`/`DateTime64` (a `datetime`), or a
number of epoch milliseconds; NULL or no row means no output yet. A query that fails or is
refused judges nothing: it is logged once (until it works again) and kept in `failing` (the
error, since when), which the service turns into a `freshness_query_failed` alert (decision
0135). Every query judges nothing while no history store answers (no alert: that is the
store's outage, not the query's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tickwheel.errors import TickwheelError
from tickwheel.services.watchdog.second_detector import _history_reader

log = logging.getLogger("tickwheel.watchdog")


class SqlFreshnessProbe:
    def __init__(self, every_ms: int, open_reader: Callable[[], Any] | None = None) -> None:
        self.every_ms = every_ms
        self._open_reader = open_reader or _history_reader
        self._reader: Any = None
        self._next_at = 0
        # query → (the error, since when): the queries that did not answer with a time.
        self.failing: dict[str, tuple[str, int]] = {}
        # `sql:<query>` → the newest output time (None: no output yet), as `stale_outputs` keys it.
        self.newest: dict[str, int | None] = {}

    def refresh(self, queries: set[str], now_ms: int) -> None:
        if now_ms < self._next_at or not queries:
            if not queries:
                self.newest.clear()
                self.failing.clear()
            return
        self._next_at = now_ms + self.every_ms
        reader = self._connect()
        for sql in sorted(queries):
            key = f"sql:{sql}"
            if reader is None:
                self.newest.pop(key, None)
                continue
            try:
                self.newest[key] = newest_ms(reader.query(sql).rows)
                self.failing.pop(sql, None)
            except (TickwheelError, ValueError, TypeError) as exc:
                self.newest.pop(key, None)  # not judged on a query that did not answer
                if sql not in self.failing:
                    log.warning(
                        f"freshness query failed: {exc}",
                        extra={"action": "freshness_query_failed", "sql": sql[:200]},
                    )
                self.failing[sql] = (str(exc), self.failing.get(sql, ("", now_ms))[1])
        for gone in set(self.newest) - {f"sql:{q}" for q in queries}:
            del self.newest[gone]
        for gone in set(self.failing) - queries:
            del self.failing[gone]

    def _connect(self) -> Any:
        if self._reader is None:
            try:
                self._reader = self._open_reader()
            except (TickwheelError, OSError) as exc:
                log.debug(f"freshness queries skipped: no history store reachable ({exc})")
                return None
        return self._reader

    def close(self) -> None:
        if self._reader is not None and hasattr(self._reader, "close"):
            self._reader.close()


def newest_ms(rows: list[tuple[Any, ...]]) -> int | None:
    """The first column of the first row as epoch ms; None for no row or NULL. Anything else
    (a string, a date) is a `ValueError` naming what is accepted."""
    if not rows or not rows[0] or rows[0][0] is None:
        return None
    value = rows[0][0]
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        if aware.timestamp() <= 0:
            return None  # max() over no rows is the epoch in ClickHouse: no output yet
        return int(aware.timestamp() * 1000)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if value > 0 else None
    raise ValueError(
        f"the freshness query returned {type(value).__name__} {str(value)[:40]!r}; accepted: "
        "a DateTime or epoch milliseconds in the first column of the first row"
    )
