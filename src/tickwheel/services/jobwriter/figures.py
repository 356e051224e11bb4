"""The single writer's own figures, logged every `LOG_EVERY_S` while it judges (the judge has
no HTTP port): commands judged by outcome, transactions committed and failed, commands per
transaction, a transaction's time, and the verdict latency — from the command's
`requested_at` (the writer's clock, on this machine the same one) to its transaction's
commit — as p50/p99/max over the interval. Totals since start ride along. The same figures
are Prometheus metrics (`metrics.py`), served on TICKWHEEL_METRICS_PORT when it is set."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from tickwheel.services.jobwriter.judge import Batch
from tickwheel.services.jobwriter.metrics import JudgeMetrics

log = logging.getLogger("tickwheel.jobwriter")
LOG_EVERY_S = 10.0


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class JudgeFigures:
    log_every_s: float = LOG_EVERY_S
    judged: Counter[str] = field(default_factory=Counter)  # since start, by outcome
    transactions: int = 0
    failed: Counter[str] = field(default_factory=Counter)  # since start, by outcome
    _latencies_ms: list[float] = field(default_factory=list)  # this interval
    _tx_seconds: list[float] = field(default_factory=list)
    _commands: int = 0
    _next_log: float | None = None
    # The same figures for a scraper (`/metrics` on TICKWHEEL_METRICS_PORT).
    metrics: JudgeMetrics = field(default_factory=JudgeMetrics)

    def committed(self, batch: Batch, seconds: float, now_ms: int) -> None:
        self.transactions += 1
        self.judged.update(batch.outcomes)
        self._commands += batch.commands
        self._tx_seconds.append(seconds)
        latencies = [float(now_ms - at) for at in batch.requested_at]
        self._latencies_ms.extend(latencies)
        self.metrics.committed(batch.outcomes, seconds, latencies)

    def failed_with(self, outcome: str) -> None:
        self.failed[outcome] += 1
        self.metrics.failed(outcome)

    def maybe_log(self, monotonic_s: float) -> None:
        """Log the interval's figures once it is `log_every_s` old and held any."""
        if self._next_log is None:
            self._next_log = monotonic_s + self.log_every_s
        if monotonic_s < self._next_log:
            return
        self._next_log = monotonic_s + self.log_every_s
        if not self._tx_seconds:
            return
        latencies, tx = self._latencies_ms, self._tx_seconds
        log.info(
            "jobwriter figures",
            extra={
                "action": "jobwriter_figures",
                "interval_s": self.log_every_s,
                "commands": self._commands,
                "transactions_in_interval": len(tx),
                "commands_per_transaction": round(self._commands / len(tx), 1),
                "transaction_ms_p50": round(_quantile(tx, 0.5) * 1000, 1),
                "transaction_ms_max": round(max(tx) * 1000, 1),
                "verdict_latency_ms_p50": round(_quantile(latencies, 0.5), 1),
                "verdict_latency_ms_p99": round(_quantile(latencies, 0.99), 1),
                "verdict_latency_ms_max": round(max(latencies, default=0.0), 1),
                "judged_total": dict(self.judged),
                "transactions_total": self.transactions,
                "failed_transactions_total": dict(self.failed),
            },
        )
        self._latencies_ms, self._tx_seconds, self._commands = [], [], 0
