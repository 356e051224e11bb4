"""ClickHouse adapters: the `HistoryStore` over embedded chDB or a ClickHouse server.

The only package that imports `chdb` or `clickhouse_connect`. DDL lives in
`topology/clickhouse/` as `.sql` files; see docs/history.md.
"""

from tickwheel.adapters.clickhouse._factory import (
    CLICKHOUSE_READ_URL_VAR,
    CLICKHOUSE_URL_VAR,
    DEFAULT_HISTORY_DIR,
    HISTORY_DIR_VAR,
    RETENTION_VAR,
    HistorySettings,
    open_history_store,
    parse_retention,
)
from tickwheel.adapters.clickhouse._limits import QueryLimits
from tickwheel.adapters.clickhouse._migrations import DEFAULT_RETENTION_DAYS
from tickwheel.adapters.clickhouse._sql import check_read_only
from tickwheel.adapters.clickhouse._store import (
    ChdbHistoryStore,
    ClickHouseServerHistoryStore,
    redact_url,
)

__all__ = [
    "CLICKHOUSE_READ_URL_VAR",
    "CLICKHOUSE_URL_VAR",
    "DEFAULT_HISTORY_DIR",
    "DEFAULT_RETENTION_DAYS",
    "HISTORY_DIR_VAR",
    "RETENTION_VAR",
    "ChdbHistoryStore",
    "ClickHouseServerHistoryStore",
    "HistorySettings",
    "QueryLimits",
    "check_read_only",
    "open_history_store",
    "parse_retention",
    "redact_url",
]
