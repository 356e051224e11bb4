"""The watchdog's Prometheus metrics: aggregates only, never a series per job."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from tickwheel.core.watchdog import KINDS, Incident

PRIORITIES = ("high", "normal", "low")


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
        self.suppressed = Gauge(
            "tickwheel_alerts_suppressed",
            "Open incidents a parent explains (shown, not notified), by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.overdue_jobs = Gauge(
            "tickwheel_watchdog_overdue_jobs",
            "Jobs with an open job_overdue incident.",
            registry=self.registry,
        )
        self.ready_age = Gauge(
            "tickwheel_watchdog_oldest_ready_age_seconds",
            "Age of the oldest execution requested and not leased, by priority (event time).",
            ["priority"],
            registry=self.registry,
        )
        self.dead_letter_age = Gauge(
            "tickwheel_watchdog_oldest_dead_letter_age_seconds",
            "Age of the oldest unresolved dead letter (event time; 0 when there is none).",
            registry=self.registry,
        )
        for kind in KINDS:
            self.open_alerts.labels(kind).set(0)
            self.suppressed.labels(kind).set(0)
        for priority in PRIORITIES:
            self.ready_age.labels(priority).set(0)

    def observe_open(self, incidents: list[Incident]) -> None:
        tally = Tally(incident.kind for incident in incidents)
        under = Tally(incident.kind for incident in incidents if incident.suppressed_by)
        for kind in sorted({*KINDS, *tally}):
            self.open_alerts.labels(kind).set(tally.get(kind, 0))
            self.suppressed.labels(kind).set(under.get(kind, 0))
        self.overdue_jobs.set(tally.get("job_overdue", 0))

    def observe_ages(self, ready_ms: dict[str, int], dead_letter_ms: int | None) -> None:
        for priority in sorted({*PRIORITIES, *ready_ms}):
            self.ready_age.labels(priority).set(ready_ms.get(priority, 0) / 1000)
        self.dead_letter_age.set((dead_letter_ms or 0) / 1000)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Loopback by default; a container sets TICKWHEEL_METRICS_ADDR=0.0.0.0 to be scraped."""
        start_http_server(port, addr=addr, registry=self.registry)
