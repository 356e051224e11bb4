"""The history sink's Prometheus metrics (text format on TICKWHEEL_METRICS_PORT): how far
behind the topics it is, and what it has written."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from tickwheel.services.history.sink_stats import SinkStats


class HistoryMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.lag_records = Gauge(
            "tickwheel_history_lag_records",
            "Records on the sink's partitions not yet written to ClickHouse.",
            registry=self.registry,
        )
        self.lag_seconds = Gauge(
            "tickwheel_history_lag_seconds",
            "Age of the newest record of the last batch when it was committed (0 when idle).",
            registry=self.registry,
        )
        self.rows = Gauge(
            "tickwheel_history_rows_written", "Rows inserted since start.", registry=self.registry
        )
        self.batches = Gauge(
            "tickwheel_history_batches_written",
            "Batches inserted since start.",
            registry=self.registry,
        )
        self.dead_lettered = Gauge(
            "tickwheel_history_dead_lettered",
            "Records dead-lettered since start.",
            registry=self.registry,
        )

    def update(self, stats: SinkStats) -> None:
        self.lag_records.set(stats.lag_records)
        self.lag_seconds.set(stats.lag_ms / 1000)
        self.rows.set(stats.rows)
        self.batches.set(stats.batches)
        self.dead_lettered.set(stats.dead_lettered)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        start_http_server(port, addr=addr, registry=self.registry)
