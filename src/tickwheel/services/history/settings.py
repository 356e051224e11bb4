"""The history service's settings: flags, each backed by a `TICKWHEEL_HISTORY_*` variable."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tickwheel.adapters.clickhouse import (
    CLICKHOUSE_URL_VAR,
    HISTORY_DIR_VAR,
    HistorySettings,
)
from tickwheel.adapters.clickhouse._limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_BYTES_VAR,
    MAX_ROWS_VAR,
    TIMEOUT_VAR,
)
from tickwheel.adapters.kafka.config import BULK_READER_FETCH, bootstrap_servers
from tickwheel.environment import env_int
from tickwheel.errors import InvalidInput
from tickwheel.history import history_settings_from_env
from tickwheel.topology import topic_name

GROUP_VAR = "TICKWHEEL_HISTORY_GROUP"
MAX_BATCH_VAR = "TICKWHEEL_HISTORY_MAX_BATCH"
BATCH_MS_VAR = "TICKWHEEL_HISTORY_BATCH_MS"
PORT_VAR = "TICKWHEEL_HISTORY_PORT"
METRICS_PORT_VAR = "TICKWHEEL_METRICS_PORT"
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


@dataclass(frozen=True)
class HistorySinkSettings:
    """Everything the history service needs; `from_env` reads the environment."""

    instance: str = "history"
    bootstrap: str = field(default_factory=bootstrap_servers)
    group_id: str = field(default_factory=lambda: topic_name("tickwheel-history"))
    max_batch: int = DEFAULT_MAX_BATCH
    max_wait_ms: int = DEFAULT_BATCH_MS
    port: int = 0
    history: HistorySettings = field(default_factory=history_settings_from_env)
    crash_after_insert: int | None = None
    metrics_port: int = 0  # 0: no metrics endpoint

    @classmethod
    def from_env(
        cls, instance: str = "history", environ: Mapping[str, str] | None = None
    ) -> HistorySinkSettings:
        env = os.environ if environ is None else environ
        crash = env_int(CRASH_VAR, 0, 0, environ=env)
        return cls(
            instance=instance,
            bootstrap=env.get("KAFKA_BOOTSTRAP_SERVERS") or bootstrap_servers(),
            group_id=env.get(GROUP_VAR, "").strip() or topic_name("tickwheel-history"),
            max_batch=env_int(MAX_BATCH_VAR, DEFAULT_MAX_BATCH, 1, environ=env),
            max_wait_ms=env_int(BATCH_MS_VAR, DEFAULT_BATCH_MS, 1, environ=env),
            port=env_int(PORT_VAR, 0, 0, environ=env),
            history=history_settings_from_env(env),
            crash_after_insert=crash or None,
            metrics_port=env_int(METRICS_PORT_VAR, 0, 0, environ=env),
        )

    @property
    def embedded(self) -> bool:
        return not self.history.clickhouse_url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The service's flags; each names its variable and defaults to it."""
    parser.add_argument(
        "--instance",
        default=os.environ.get("TICKWHEEL_INSTANCE", "history"),
        help="instance name, used in logs and the consumer's static membership "
        "(env TICKWHEEL_INSTANCE)",
    )
    parser.add_argument(
        "--group", help=f"consumer group (env {GROUP_VAR}; default <prefix>tickwheel-history)"
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        help=f"most records per ClickHouse insert (env {MAX_BATCH_VAR}; default {DEFAULT_MAX_BATCH})",
    )
    parser.add_argument(
        "--max-wait-ms",
        type=int,
        help=f"longest a batch waits to fill, in ms (env {BATCH_MS_VAR}; default {DEFAULT_BATCH_MS})",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"port of the read-only query endpoint on 127.0.0.1, embedded mode only "
        f"(env {PORT_VAR}; default 0 = any free port, announced in <history-dir>/owner.json)",
    )
    parser.add_argument(
        "--query-max-rows",
        type=int,
        help=f"most rows one query through the endpoint may return (env {MAX_ROWS_VAR}; "
        f"default {DEFAULT_MAX_ROWS})",
    )
    parser.add_argument(
        "--query-max-bytes",
        type=int,
        help=f"most bytes one query's result may hold (env {MAX_BYTES_VAR}; "
        f"default {DEFAULT_MAX_BYTES})",
    )
    parser.add_argument(
        "--query-timeout-s",
        type=int,
        help=f"longest one query may run, in seconds (env {TIMEOUT_VAR}; "
        f"default {DEFAULT_TIMEOUT_S})",
    )
    parser.add_argument(
        "--history-dir",
        type=Path,
        help=f"embedded store directory (env {HISTORY_DIR_VAR}; default $TICKWHEEL_HOME/history)",
    )
    parser.add_argument(
        "--clickhouse-url",
        help=f"write to a ClickHouse server instead (env {CLICKHOUSE_URL_VAR})",
    )


def settings_from_args(args: argparse.Namespace) -> HistorySinkSettings:
    """Settings from the environment, overridden by the flags given."""
    settings = HistorySinkSettings.from_env(instance=args.instance)
    for flag, value in (("--max-batch", args.max_batch), ("--max-wait-ms", args.max_wait_ms)):
        if value is not None and value < 1:
            raise InvalidInput(flag, "must be at least 1")
    history = settings.history
    if args.history_dir is not None:
        history = dataclasses.replace(history, history_dir=args.history_dir)
    if args.clickhouse_url:
        history = dataclasses.replace(history, clickhouse_url=args.clickhouse_url)
    limits = history.query_limits
    overrides = {
        name: value
        for name, value in (
            ("max_rows", getattr(args, "query_max_rows", None)),
            ("max_bytes", getattr(args, "query_max_bytes", None)),
            ("timeout_s", getattr(args, "query_timeout_s", None)),
        )
        if value is not None
    }
    if overrides:
        try:
            limits = dataclasses.replace(limits, **overrides)
        except InvalidInput as exc:
            flag = "--query-" + exc.field.replace("_", "-")
            raise InvalidInput(flag, exc.message) from None
        history = dataclasses.replace(history, query_limits=limits)
    return dataclasses.replace(
        settings,
        group_id=args.group or settings.group_id,
        max_batch=settings.max_batch if args.max_batch is None else args.max_batch,
        max_wait_ms=settings.max_wait_ms if args.max_wait_ms is None else args.max_wait_ms,
        port=settings.port if args.port is None else args.port,
        history=history,
    )
