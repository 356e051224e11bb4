"""The orchestrator's Prometheus metrics (text format on TICKWHEEL_METRICS_PORT): aggregates
only, never a series per instance or per definition — a workflow id in a label would grow the
scrape with every instance ever started.

- `tickwheel_orchestrator_instances{state}`: instances held in memory, `open` (not finished)
  or `finished` (waiting out the retention before they are pruned);
- `tickwheel_orchestrator_inputs{outcome}`, `..._events`, `..._step_transitions`: counters
  whose `rate()` is the inputs, events and step transitions (an event that changes a step's
  status) per second; an input is `folded`, `dead_lettered` or `forwarded` (read on a
  partition that does not own its workflow, passed on to the one that does);
- `tickwheel_orchestrator_transaction_seconds`: one batch transaction of one partition, from
  `begin` to the end of `commit` (events, snapshots, commands, checkpoint);
- `tickwheel_orchestrator_input_lag_seconds` / `..._input_lag_records`: how long the oldest
  input of the last poll waited on `workflows.inputs` before it was folded, and how many
  inputs of the owned partitions are still unread;
- `tickwheel_orchestrator_pruned`, `..._restore_seconds`, `..._partitions`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

TRANSACTION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
TRANSACTION_OUTCOMES = ("committed", "fenced", "failed")
INPUT_OUTCOMES = ("folded", "dead_lettered", "forwarded")


class OrchestratorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.instances = Gauge(
            "tickwheel_orchestrator_instances",
            "Workflow instances held in memory: open, or finished and not yet pruned.",
            ["state"],
            registry=self.registry,
        )
        self.inputs = Counter(
            "tickwheel_orchestrator_inputs",
            "Inputs read from workflows.inputs: folded, dead-lettered, or forwarded to their owner.",
            ["outcome"],
            registry=self.registry,
        )
        self.events = Counter(
            "tickwheel_orchestrator_events", "Workflow events written.", registry=self.registry
        )
        self.step_transitions = Counter(
            "tickwheel_orchestrator_step_transitions",
            "Events that changed a step's status (scheduled, succeeded, failed, ...).",
            registry=self.registry,
        )
        self.transaction_seconds = Histogram(
            "tickwheel_orchestrator_transaction_seconds",
            "One partition's batch transaction, begin to committed.",
            buckets=TRANSACTION_BUCKETS,
            registry=self.registry,
        )
        self.transactions = Counter(
            "tickwheel_orchestrator_transactions",
            "Batch transactions, by outcome (committed, fenced, failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.input_lag_seconds = Gauge(
            "tickwheel_orchestrator_input_lag_seconds",
            "How long the oldest input of the last poll waited before it was folded.",
            registry=self.registry,
        )
        self.input_lag_records = Gauge(
            "tickwheel_orchestrator_input_lag_records",
            "Inputs of the owned partitions not read yet (log end minus next input).",
            registry=self.registry,
        )
        self.pruned = Counter(
            "tickwheel_orchestrator_pruned",
            "Finished instances pruned after the retention (snapshot tombstoned).",
            registry=self.registry,
        )
        self.restore_seconds = Histogram(
            "tickwheel_orchestrator_restore_seconds",
            "Time to restore one partition.",
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.partitions = Gauge(
            "tickwheel_orchestrator_partitions",
            "Partitions of workflows.inputs this instance serves.",
            registry=self.registry,
        )
        self.webhooks = Counter(
            "tickwheel_orchestrator_approval_webhook_attempts",
            "Approval webhook delivery attempts, by outcome (delivered, retry, rejected), over "
            "all sinks.",
            ["outcome"],
            registry=self.registry,
        )
        for state in ("open", "finished"):
            self.instances.labels(state).set(0)
        for outcome in INPUT_OUTCOMES:
            self.inputs.labels(outcome)
        for outcome in TRANSACTION_OUTCOMES:
            self.transactions.labels(outcome)

    def observe_instances(self, open_: int, finished: int) -> None:
        self.instances.labels("open").set(open_)
        self.instances.labels("finished").set(finished)

    def observe_transaction(self, outcome: str, seconds: float) -> None:
        self.transactions.labels(outcome).inc()
        if outcome == "committed":
            self.transaction_seconds.observe(seconds)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Loopback by default; a container sets TICKWHEEL_METRICS_ADDR=0.0.0.0 to be scraped."""
        start_http_server(port, addr=addr, registry=self.registry)
