"""The history service's settings, declared once (decision 0215): each field's variable, how
it is read, its default and what it means; each has a flag that wins over its variable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwheel.adapters.clickhouse import (
    CLICKHOUSE_READ_URL_VAR,
    CLICKHOUSE_URL_VAR,
    HISTORY_DIR_VAR,
    RETENTION_VAR,
    HistorySettings,
    parse_retention,
)
from tickwheel.adapters.clickhouse._limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_BYTES_VAR,
    MAX_ROWS_VAR,
    TIMEOUT_VAR,
    QueryLimits,
)
from tickwheel.adapters.clickhouse._migrations import DEFAULT_RETENTION_DAYS
from tickwheel.adapters.kafka.config import BULK_READER_FETCH
from tickwheel.paths import state_home
from tickwheel.services.environment import (
    Text,
    Using,
    Whole,
    bootstrap_setting,
    group,
    instance_setting,
    log_level_setting,
    metrics_addr_setting,
    metrics_port_setting,
    path,
    setting,
    var,
)
from tickwheel.topology import topic_name

GROUP_VAR = "TICKWHEEL_HISTORY_GROUP"
MAX_BATCH_VAR = "TICKWHEEL_HISTORY_MAX_BATCH"
BATCH_MS_VAR = "TICKWHEEL_HISTORY_BATCH_MS"
PORT_VAR = "TICKWHEEL_HISTORY_PORT"
#: Test-only: SIGKILL the process right after its Nth batch insert, before the offset commit.
CRASH_VAR = "TICKWHEEL_HISTORY_CRASH_AFTER_INSERT"

# Large, columnar inserts keep up with the pipeline (decision 0072); a batch also ends at
# its wait, so a quiet system still writes within DEFAULT_BATCH_MS. A busy flow's batch
# holds a second of records (decision 0171): 30,000 at 10,000 executions/s, which this cap
# must not cut (decision 0183: each insert is a part, each part merges).
DEFAULT_MAX_BATCH = 60_000
DEFAULT_BATCH_MS = 200
# The sink reads every event and batches anyway: fetches that wait for a chunk (decision 0172).
SINK_FETCH = BULK_READER_FETCH


def _group() -> str:
    return topic_name("tickwheel-history")


def _store(
    clickhouse_url: str | None,
    clickhouse_read_url: str | None,
    history_dir: Path,
    retention_days: dict[str, int],
    query_max_rows: int,
    query_max_bytes: int,
    query_timeout_s: int,
) -> HistorySettings:
    return HistorySettings(
        clickhouse_url=clickhouse_url or None,
        clickhouse_read_url=clickhouse_read_url or None,
        history_dir=history_dir,
        retention_days=retention_days,
        query_limits=QueryLimits(query_max_rows, query_max_bytes, query_timeout_s),
    )


def _retention(name: str, text: str) -> dict[str, int]:
    return parse_retention(text)


def _shown_retention(value: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in value.items())


@dataclass(frozen=True)
class HistorySinkSettings:
    """Everything the history service needs; `from_env(HistorySinkSettings)` reads the
    environment."""

    instance: str = instance_setting("history")
    bootstrap: str = bootstrap_setting()
    group_id: str = setting(
        GROUP_VAR,
        Text(),
        help="consumer group",
        flag="--group",
        default_factory=_group,
        shown="<prefix>tickwheel-history",
    )
    max_batch: int = setting(
        MAX_BATCH_VAR, Whole(), DEFAULT_MAX_BATCH, "most records per ClickHouse insert"
    )
    max_wait_ms: int = setting(
        BATCH_MS_VAR, Whole(), DEFAULT_BATCH_MS, "longest a batch waits to fill, in ms"
    )
    port: int = setting(
        PORT_VAR,
        Whole(minimum=0),
        0,
        "port of the read-only query endpoint on 127.0.0.1, embedded mode only; 0 = any free "
        "port, announced in <history-dir>/owner.json",
    )
    # `group` returns a dataclasses.field whose settings are made afresh for each instance.
    history: HistorySettings = group(  # noqa: RUF009
        _store,
        clickhouse_url=var(
            CLICKHOUSE_URL_VAR, Text(), None, "write to a ClickHouse server instead", shown="none"
        ),
        clickhouse_read_url=var(
            CLICKHOUSE_READ_URL_VAR,
            Text(),
            None,
            "the server's reader credentials (a read-only user)",
            shown="the writer's",
        ),
        history_dir=var(
            HISTORY_DIR_VAR,
            Using(path),
            help="embedded store directory",
            default_factory=lambda: state_home() / "history",
            shown="$TICKWHEEL_HOME/history",
        ),
        retention_days=var(
            RETENTION_VAR,
            Using(_retention, _shown_retention),
            dict(DEFAULT_RETENTION_DAYS),
            "days each table keeps, e.g. execution_events=30,alerts=90 (docs/history.md)",
            flag="--retention-days",
            shown="each table's own (docs/history.md)",
        ),
        query_max_rows=var(
            MAX_ROWS_VAR,
            Whole(),
            DEFAULT_MAX_ROWS,
            "most rows one query through the endpoint may return",
        ),
        query_max_bytes=var(
            MAX_BYTES_VAR, Whole(), DEFAULT_MAX_BYTES, "most bytes one query's result may hold"
        ),
        query_timeout_s=var(
            TIMEOUT_VAR, Whole(), DEFAULT_TIMEOUT_S, "longest one query may run, in seconds"
        ),
    )
    crash_after_insert: int | None = setting(
        CRASH_VAR,
        Whole(minimum=0, zero_is_none=True),
        None,
        "test hook: SIGKILL the process right after its Nth batch insert",
        flag=None,
        shown="off",
    )
    metrics_port: int = metrics_port_setting()
    metrics_addr: str = metrics_addr_setting()
    log_level: str = log_level_setting()

    @property
    def embedded(self) -> bool:
        return not self.history.clickhouse_url
