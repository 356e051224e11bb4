"""The history service process: `python -m tickwheel.services.history --instance NAME`.

It opens (embedded: owns) the history store, applies pending migrations, joins its consumer
group on every event topic, and runs the sink loop. In embedded mode it also serves read-only
queries on 127.0.0.1 and announces the endpoint in `<history_dir>/owner.json` (decision 0035),
so the CLI and the API read through it instead of opening the directory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from typing import Any

from tickwheel.adapters.clickhouse import ChdbHistoryStore, open_history_store
from tickwheel.adapters.kafka.admin import verify_topology
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.clock import Clock, SystemClock
from tickwheel.history import OwnerInfo, remove_owner, write_owner
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import KAFKA_BUDGET_S, ShutdownDeadline, serve
from tickwheel.services.environment import load, log_level
from tickwheel.services.history.endpoint import QueryEndpoint
from tickwheel.services.history.metrics import HistoryMetrics
from tickwheel.services.history.settings import (
    CRASH_VAR,
    SINK_FETCH,
    HistorySinkSettings,
)
from tickwheel.services.history.sink import HistorySink

log = logging.getLogger("tickwheel.history")

PROGRESS_EVERY_S = 10.0


def crash_after(n: int) -> Any:
    """The test hook of `TICKWHEEL_HISTORY_CRASH_AFTER_INSERT`: die by SIGKILL right after the
    Nth insert, before its offsets are committed — the worst moment for idempotence."""

    def hook(inserts: int) -> None:
        if inserts == n:
            log.warning("crashing on purpose", extra={"action": "history_test_crash", "insert": n})
            for handler in logging.getLogger().handlers:
                handler.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class HistoryService:
    """Wiring and lifecycle around one `HistorySink`."""

    def __init__(
        self,
        settings: HistorySinkSettings,
        clock: Clock | None = None,
        deadline: ShutdownDeadline | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self._stopping = threading.Event()
        self.sink: HistorySink | None = None
        # Set by the process entry point only: past it, a stop gives up and the process exits.
        self.deadline = deadline

    def stop(self, *_args: Any) -> None:
        self._stopping.set()
        if self.deadline is not None:
            # One batch may be mid-insert: its insert and commit, then the close, fit in this.
            self.deadline.arm(KAFKA_BUDGET_S)

    def status(self) -> dict[str, Any]:
        return self.sink.stats.as_dict() if self.sink is not None else {}

    def run(self) -> int:
        settings = self.settings
        verify_topology(bootstrap=settings.bootstrap)
        store = open_history_store(settings.history)
        endpoint: QueryEndpoint | None = None
        consumer: Consumer | None = None
        owner_dir: str | None = None
        try:
            applied = store.migrate()
            if applied:
                log.info(
                    "history schema migrated",
                    extra={"action": "history_migrated", "migrations": applied},
                )
            consumer = Consumer(
                consumer_config(
                    settings.group_id,
                    settings.bootstrap,
                    **{
                        "session.timeout.ms": 10000,
                        "heartbeat.interval.ms": 1000,
                        "max.poll.interval.ms": 300000,
                        "enable.partition.eof": False,
                        # Static membership: a restarted sink gets its partitions back at once.
                        "group.instance.id": f"{settings.group_id}-{settings.instance}",
                        **SINK_FETCH,
                    },
                )
            )
            self.sink = HistorySink(
                store,
                consumer,
                DeadLetterWriter(settings.bootstrap, self.clock),
                max_batch=settings.max_batch,
                max_wait_s=settings.max_wait_ms / 1000,
                after_insert=(
                    crash_after(settings.crash_after_insert)
                    if settings.crash_after_insert
                    else None
                ),
                # A server's insert is a wait on the network, which the next batch's read
                # can fill; embedded chDB's is this process's CPU on the same cores as the
                # loop, and overlapping the two measured slower there (decision 0150).
                pipelined=not settings.embedded,
            )
            self.sink.subscribe()
            if isinstance(store, ChdbHistoryStore):
                owner = OwnerInfo.create(
                    port=settings.port, directory=store.directory, instance=settings.instance
                )
                endpoint = QueryEndpoint(
                    store,
                    owner.token,
                    port=settings.port,
                    status=self.status,
                    location=store.directory,
                )
                owner = dataclasses.replace(owner, port=endpoint.start())
                write_owner(store.directory, owner)
                owner_dir = store.directory
            log.info(
                "history sink started",
                extra={
                    "action": "history_sink_started",
                    "instance": settings.instance,
                    "group": settings.group_id,
                    "store": store.location,
                    "endpoint_port": endpoint.port if endpoint else None,
                    "max_batch": settings.max_batch,
                    "max_wait_ms": settings.max_wait_ms,
                    "test_crash_after_insert": settings.crash_after_insert,
                },
            )
            self._loop(self.sink)
            # The batch still being inserted is committed before the consumer closes.
            self.sink.finish()
        finally:
            if endpoint is not None:
                endpoint.stop()
            if owner_dir is not None:
                remove_owner(owner_dir, os.getpid())
            # The store first: a consumer's close can block on a broker that has gone, and
            # the deadline may then end the process; offsets are committed after each insert
            # already, so the close has nothing of the store's left to do.
            store.close()
            if consumer is not None:
                consumer.close()
        log.info("history sink stopped", extra={"action": "history_sink_stopped", **self.status()})
        return 0

    def _loop(self, sink: HistorySink) -> None:
        reported = time.monotonic()
        last_rows = 0
        metrics: HistoryMetrics | None = None
        if self.settings.metrics_port:
            metrics = HistoryMetrics()
            metrics.serve(self.settings.metrics_port, self.settings.metrics_addr)
        while not self._stopping.is_set():
            sink.step()
            if metrics is not None:
                metrics.update(sink.stats)
            now = time.monotonic()
            if now - reported >= PROGRESS_EVERY_S and sink.stats.rows != last_rows:
                log.info(
                    "history sink progress",
                    extra={"action": "history_sink_progress", **sink.stats.as_dict()},
                )
                reported, last_rows = now, sink.stats.rows


def main(argv: list[str] | None = None) -> None:
    settings = load(
        HistorySinkSettings,
        "history",
        argv,
        description=(
            "The history sink: every event topic into ClickHouse (embedded chDB, or a server "
            f"with CLICKHOUSE_URL), offsets committed after the insert. {CRASH_VAR} is a test "
            "hook (SIGKILL after the Nth insert)."
        ),
    )
    configure_logging(log_level(settings.log_level))
    serve(
        log,
        "history_sink",
        lambda deadline: HistoryService(settings, deadline=deadline),
        program="history",
    )
