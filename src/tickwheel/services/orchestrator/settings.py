"""The orchestrator's settings, from the environment. A bad value stops the service with one
line naming the variable and what it accepts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.core.targets import IPNetwork
from tickwheel.durations import parse_duration_ms
from tickwheel.environment import env_int, env_seconds
from tickwheel.errors import InvalidInput
from tickwheel.services.webhooks import allowed_networks
from tickwheel.topology import topic_name

RETENTION_VAR = "TICKWHEEL_ORCHESTRATOR_RETENTION"
WEBHOOKS_VAR = "TICKWHEEL_APPROVAL_WEBHOOKS"
WEBHOOK_SECRET_VAR = "TICKWHEEL_APPROVAL_WEBHOOK_SECRET"
WEBHOOK_NETWORKS_VAR = "TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS"
DEFAULT_RETENTION = "7d"


def _retention_ms() -> int:
    text = os.environ.get(RETENTION_VAR, DEFAULT_RETENTION)
    value = parse_duration_ms(text, RETENTION_VAR)
    if value < 1000:
        raise InvalidInput(RETENTION_VAR, f"{text!r} is under a second; use e.g. '7d', '12h'")
    return value


@dataclass
class OrchestratorSettings:
    """Environment: TICKWHEEL_ORCHESTRATOR_GROUP (the consumer group),
    TICKWHEEL_ORCHESTRATOR_MAX_BATCH (inputs one poll reads, over every owned partition,
    default 500),
    TICKWHEEL_ORCHESTRATOR_POLL_MS (how long an idle poll waits for an input, default 10; it
    returns at the first one, decision 0131), TICKWHEEL_ORCHESTRATOR_RETENTION (how long a
    finished instance stays in memory and on workflows.state before it is pruned, default
    7d: operators can repair a failed instance until then; decision 0095),
    TICKWHEEL_METRICS_PORT (Prometheus text format, 0 = off, the default);
    approval webhooks (decision 0132): TICKWHEEL_APPROVAL_WEBHOOKS (comma-separated URLs),
    TICKWHEEL_APPROVAL_WEBHOOK_SECRET (`whsec_` + base64, required with URLs),
    TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS (CIDRs a receiver may be in besides public
    addresses), TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S (first retry's wait, 1) and
    TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_CAP_S (300)."""

    instance: str = "orchestrator"
    bootstrap: str = field(default_factory=bootstrap_servers)
    group_id: str = field(
        default_factory=lambda: os.environ.get(
            "TICKWHEEL_ORCHESTRATOR_GROUP", topic_name("tickwheel-orchestrator")
        )
    )
    max_batch: int = field(default_factory=lambda: env_int("TICKWHEEL_ORCHESTRATOR_MAX_BATCH", 500))
    poll_ms: int = field(default_factory=lambda: env_int("TICKWHEEL_ORCHESTRATOR_POLL_MS", 10))
    retention_ms: int = field(default_factory=_retention_ms)
    metrics_port: int = field(
        default_factory=lambda: env_int("TICKWHEEL_METRICS_PORT", 0, minimum=0)
    )
    approval_webhooks: list[str] = field(
        default_factory=lambda: [
            u.strip() for u in os.environ.get(WEBHOOKS_VAR, "").split(",") if u.strip()
        ]
    )
    approval_webhook_secret: str = field(
        default_factory=lambda: os.environ.get(WEBHOOK_SECRET_VAR, "")
    )
    approval_webhook_networks: tuple[IPNetwork, ...] = field(
        default_factory=lambda: allowed_networks(
            WEBHOOK_NETWORKS_VAR, os.environ.get(WEBHOOK_NETWORKS_VAR, "")
        )
    )
    approval_webhook_backoff_s: tuple[float, float] = field(
        default_factory=lambda: (
            env_seconds("TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S", 1),
            env_seconds("TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_CAP_S", 300),
        )
    )
