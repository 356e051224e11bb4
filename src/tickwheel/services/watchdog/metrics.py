"""The watchdog's Prometheus metrics: aggregates only, never a series per job."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from tickwheel.core.watchdog import KINDS, Incident


class WatchdogMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.open_alerts = Gauge(
            "tickwheel_alerts_open", "Open alert incidents.", ["kind"], registry=self.registry
        )
        self.lag = Gauge(
            "tickwheel_watchdog_input_lag_seconds",
            "The watchdog's clock minus its event-time watermark.",
            registry=self.registry,
        )
        self.last_evaluation = Gauge(
            "tickwheel_watchdog_last_evaluation_timestamp_seconds",
            "When the watchdog last evaluated (its clock).",
            registry=self.registry,
        )
        self.transitions = Counter(
            "tickwheel_watchdog_transitions",
            "Alert transitions written.",
            ["transition"],
            registry=self.registry,
        )
        self.undecodable = Counter(
            "tickwheel_watchdog_undecodable_records",
            "Input records the watchdog could not decode (and passed over).",
            registry=self.registry,
        )
        self.webhooks = Counter(
            "tickwheel_watchdog_webhook_attempts",
            "Webhook delivery attempts, by outcome (delivered, retry, rejected), over all sinks.",
            ["outcome"],
            registry=self.registry,
        )
        for kind in KINDS:
            self.open_alerts.labels(kind).set(0)

    def observe_open(self, incidents: list[Incident]) -> None:
        tally = Tally(incident.kind for incident in incidents)
        for kind in sorted({*KINDS, *tally}):
            self.open_alerts.labels(kind).set(tally.get(kind, 0))

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Loopback by default; a container sets TICKWHEEL_METRICS_ADDR=0.0.0.0 to be scraped."""
        start_http_server(port, addr=addr, registry=self.registry)
