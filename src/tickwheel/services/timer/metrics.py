"""The timer's Prometheus metrics (text format on TICKWHEEL_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class TimerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.fire_lag = Histogram(
            "tickwheel_timer_fire_lag_seconds",
            "Emit time minus intended fire time (slot plus jitter).",
            buckets=LAG_BUCKETS,
            registry=self.registry,
        )
        self.emitted = Counter(
            "tickwheel_timer_occurrences_emitted",
            "Execution requests emitted.",
            registry=self.registry,
        )
        self.skipped = Counter(
            "tickwheel_timer_occurrences_skipped",
            "Occurrences recorded as skipped.",
            registry=self.registry,
        )
        self.wheel_size = Gauge(
            "tickwheel_timer_wheel_entries",
            "Entries in the wheel.",
            ["partition"],
            registry=self.registry,
        )
        self.restore_seconds = Histogram(
            "tickwheel_timer_restore_seconds",
            "Time to restore one partition.",
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.transactions = Counter(
            "tickwheel_timer_transactions", "Transactions committed.", registry=self.registry
        )
        self.aborts = Counter(
            "tickwheel_timer_transaction_aborts",
            "Transactions aborted or failed.",
            registry=self.registry,
        )

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Loopback by default; a container sets TICKWHEEL_METRICS_ADDR=0.0.0.0 to be scraped."""
        start_http_server(port, addr=addr, registry=self.registry)
