"""The single writer's Prometheus metrics (text format on TICKWHEEL_METRICS_PORT, off by
default; loopback unless TICKWHEEL_METRICS_ADDR says otherwise): what `figures.py` logs every
10 s, for a scraper. Aggregates only, never a series per job or per command.

- `tickwheel_jobwriter_commands{outcome}`: commands judged and committed, by verdict
  (created, updated, deleted, exists, not_found, version_conflict, invalid);
- `tickwheel_jobwriter_transactions{outcome}`: transactions (one per poll that judged
  anything, over all its partitions: decision 0178), committed or how they failed;
- `tickwheel_jobwriter_transaction_seconds`: one committed transaction, begin to commit;
- `tickwheel_jobwriter_verdict_latency_seconds`: a command's `requested_at` (its writer's
  clock) to its transaction's commit;
- `tickwheel_jobwriter_partitions`: partitions restored and judged here.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class JudgeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.commands = Counter(
            "tickwheel_jobwriter_commands",
            "Commands judged and committed, by verdict outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.transactions = Counter(
            "tickwheel_jobwriter_transactions",
            "Transactions (one per poll), committed or how they failed.",
            ["outcome"],
            registry=self.registry,
        )
        self.transaction_seconds = Histogram(
            "tickwheel_jobwriter_transaction_seconds",
            "One committed transaction, from begin to the end of commit.",
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.verdict_latency = Histogram(
            "tickwheel_jobwriter_verdict_latency_seconds",
            "A command's requested_at (its writer's clock) to its transaction's commit.",
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.partitions = Gauge(
            "tickwheel_jobwriter_partitions",
            "Partitions of jobs.commands restored and judged here.",
            registry=self.registry,
        )

    def committed(
        self, outcomes: Mapping[str, int], seconds: float, latencies_ms: list[float]
    ) -> None:
        self.transactions.labels("committed").inc()
        self.transaction_seconds.observe(seconds)
        for outcome, count in outcomes.items():
            self.commands.labels(outcome).inc(count)
        for latency in latencies_ms:
            self.verdict_latency.observe(max(0.0, latency) / 1000)

    def failed(self, outcome: str) -> None:
        self.transactions.labels(outcome).inc()

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        start_http_server(port, addr=addr, registry=self.registry)
