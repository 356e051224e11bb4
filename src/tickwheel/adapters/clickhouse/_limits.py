"""Caps on one history query: rows, bytes and seconds, set on the reader's session.

The embedded store's owner is the history sink: a query that reads without end, or returns
a table whole, would stall every other reader (reads are serialised) and could exhaust the
memory of the process that ingests. So the reader session carries ClickHouse's result and
time limits, and then `readonly = 1`, under which the engine refuses any change of setting —
`SETTINGS max_result_rows = 0` in the query included (decision 0051).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tickwheel.environment import env_int
from tickwheel.errors import InvalidInput

MAX_ROWS_VAR = "TICKWHEEL_HISTORY_QUERY_MAX_ROWS"
MAX_BYTES_VAR = "TICKWHEEL_HISTORY_QUERY_MAX_BYTES"
TIMEOUT_VAR = "TICKWHEEL_HISTORY_QUERY_TIMEOUT_S"

DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_BYTES = 128 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30

#: ClickHouse error codes of the limits, mapped to the variable that sets each.
TOO_MANY_ROWS_OR_BYTES = 396
TIMEOUT_EXCEEDED = 159
TOO_SLOW = 160


@dataclass(frozen=True)
class QueryLimits:
    """Per-query caps of the reader session; a query cannot raise them."""

    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_s: int = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        for name, value in (
            ("max_rows", self.max_rows),
            ("max_bytes", self.max_bytes),
            ("timeout_s", self.timeout_s),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(name, f"must be a whole number of at least 1, got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> QueryLimits:
        """`TICKWHEEL_HISTORY_QUERY_MAX_ROWS`, `..._MAX_BYTES`, `..._TIMEOUT_S`."""
        return cls(
            max_rows=env_int(MAX_ROWS_VAR, DEFAULT_MAX_ROWS, environ=environ),
            max_bytes=env_int(MAX_BYTES_VAR, DEFAULT_MAX_BYTES, environ=environ),
            timeout_s=env_int(TIMEOUT_VAR, DEFAULT_TIMEOUT_S, environ=environ),
        )

    def session_settings(self) -> dict[str, str]:
        """The ClickHouse settings, in the order they must be applied (`readonly` last)."""
        return {
            "max_result_rows": str(self.max_rows),
            "max_result_bytes": str(self.max_bytes),
            # throw, not break: a silently truncated answer reads as a complete one.
            "result_overflow_mode": "throw",
            "max_execution_time": str(self.timeout_s),
            "timeout_overflow_mode": "throw",
        }

    def explain(self, code: int | None) -> str | None:
        """What to tell the user when ClickHouse stopped a query at a cap, else None."""
        if code == TOO_MANY_ROWS_OR_BYTES:
            return (
                f"the result is larger than a history query may return ({self.max_rows} rows or "
                f"{self.max_bytes} bytes; {MAX_ROWS_VAR} / {MAX_BYTES_VAR}): add a LIMIT, "
                "select fewer columns, or aggregate"
            )
        if code in (TIMEOUT_EXCEEDED, TOO_SLOW):
            return (
                f"the query ran longer than {self.timeout_s} s ({TIMEOUT_VAR}): narrow the time "
                "range (every table is partitioned by day) or filter on the sorting key"
            )
        return None
