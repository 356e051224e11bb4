"""The timer's Prometheus metrics (text format on TICKWHEEL_METRICS_PORT)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import HistogramMetricFamily

LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class BatchHistogram:
    """A Prometheus histogram fed a transaction's worth of values at once: the fire lag is
    observed for every occurrence, and `Histogram.observe` (a lock and a bucket walk per
    value) cost more than a tenth of what emitting an occurrence costs."""

    def __init__(
        self, name: str, documentation: str, buckets: tuple[float, ...], registry: CollectorRegistry
    ) -> None:
        self.name, self.documentation, self.buckets = name, documentation, buckets
        self.counts = [0] * (len(buckets) + 1)  # the last one is +Inf
        self.total = 0.0
        registry.register(self)

    def observe_many(self, values: Iterable[float]) -> None:
        counts, buckets = self.counts, self.buckets
        total = 0.0
        for value in values:
            counts[bisect_left(buckets, value)] += 1  # the first bound >= value: `le`
            total += value
        self.total += total

    def observe_counted(self, counted: Mapping[float, int]) -> None:
        """Each value of `counted` observed as many times as it counts: a burst's transaction
        holds thousands of requests with one fire time, and so one lag."""
        counts, buckets = self.counts, self.buckets
        total = 0.0
        for value, times in counted.items():
            counts[bisect_left(buckets, value)] += times
            total += value * times
        self.total += total

    def collect(self) -> Iterator[HistogramMetricFamily]:
        cumulative, running = [], 0
        for bound, count in zip((*map(str, self.buckets), "+Inf"), self.counts, strict=True):
            running += count
            cumulative.append((bound, running))
        yield HistogramMetricFamily(
            self.name, self.documentation, buckets=cumulative, sum_value=self.total
        )


class TimerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.fire_lag = BatchHistogram(
            "tickwheel_timer_fire_lag_seconds",
            "Emit time minus intended fire time (slot plus jitter).",
            LAG_BUCKETS,
            self.registry,
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
