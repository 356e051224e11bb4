"""The watchdog's settings, from the environment."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.core.targets import IPNetwork
from tickwheel.core.watchdog import Thresholds
from tickwheel.environment import env_int, env_ms, env_seconds
from tickwheel.services.webhooks import (
    alert_webhook_networks,
    alert_webhook_secret,
    alert_webhook_urls,
)


@dataclass
class WatchdogSettings:
    """Environment: TICKWHEEL_WATCHDOG_TICK_MS (evaluation tick), TICKWHEEL_WATCHDOG_LATENESS_S
    (how far the watermark trails the inputs, for records produced but not yet readable),
    TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S, TICKWHEEL_WATCHDOG_UPDATE_EVERY_S,
    TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S, TICKWHEEL_WATCHDOG_READY_AGE_S,
    TICKWHEEL_WATCHDOG_GRACE_S (slack of a derived interval), TICKWHEEL_WATCHDOG_RUN_GRACE_S (how
    far past maxRunTime a run is too long), TICKWHEEL_WATCHDOG_LAG_ALERT_S (watchdog_lagging:
    inputs this far behind for this long), TICKWHEEL_WATCHDOG_FRESHNESS_EVERY_S (how often the
    output topics' newest records are read, 30), TICKWHEEL_WATCHDOG_AUDIT_EVERY_S (the second
    detector's round, 300; 0 = off), TICKWHEEL_WATCHDOG_AUDIT_LOOKBACK_S (86400),
    TICKWHEEL_WATCHDOG_AUDIT_JOBS (jobs audited per round, 50), TICKWHEEL_METRICS_PORT (0 = off);
    webhooks: TICKWHEEL_WATCHDOG_WEBHOOKS (comma-separated URLs), TICKWHEEL_WATCHDOG_WEBHOOK_SECRET
    (`whsec_` + base64, required with URLs), TICKWHEEL_WATCHDOG_WEBHOOK_ALLOWED_NETWORKS (CIDRs
    a receiver may be in besides public addresses), TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_S (first
    retry's wait, 1) and TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_CAP_S (300)."""

    instance: str = "watchdog"
    bootstrap: str = field(default_factory=bootstrap_servers)
    tick_ms: int = field(default_factory=lambda: env_int("TICKWHEEL_WATCHDOG_TICK_MS", 1000))
    lateness_ms: int = field(default_factory=lambda: env_ms("TICKWHEEL_WATCHDOG_LATENESS_S", 2.0))
    freshness_every_ms: int = field(
        default_factory=lambda: env_ms("TICKWHEEL_WATCHDOG_FRESHNESS_EVERY_S", 30)
    )
    # The second detector: (every ms, lookback ms, jobs per round); every 0 = off.
    audit: tuple[int, int, int] = field(
        default_factory=lambda: (
            env_ms("TICKWHEEL_WATCHDOG_AUDIT_EVERY_S", 300),
            env_ms("TICKWHEEL_WATCHDOG_AUDIT_LOOKBACK_S", 86_400),
            env_int("TICKWHEEL_WATCHDOG_AUDIT_JOBS", 50),
        )
    )
    lag_alert_ms: int = field(default_factory=lambda: env_ms("TICKWHEEL_WATCHDOG_LAG_ALERT_S", 60))
    metrics_port: int = field(
        default_factory=lambda: env_int("TICKWHEEL_METRICS_PORT", 0, minimum=0)
    )
    webhooks: list[str] = field(default_factory=alert_webhook_urls)
    webhook_secret: str = field(default_factory=alert_webhook_secret)
    webhook_allowed_networks: tuple[IPNetwork, ...] = field(default_factory=alert_webhook_networks)
    webhook_backoff_s: tuple[float, float] = field(
        default_factory=lambda: (
            env_seconds("TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_S", 1),
            env_seconds("TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_CAP_S", 300),
        )
    )
    thresholds: Thresholds = field(
        default_factory=lambda: Thresholds(
            dead_letter_age_ms=env_ms("TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S", 3600),
            oldest_ready_age_ms=env_ms("TICKWHEEL_WATCHDOG_READY_AGE_S", 300),
            derived_grace_ms=env_ms("TICKWHEEL_WATCHDOG_GRACE_S", 60),
            resolve_after_ms=env_ms("TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S", 60),
            update_every_ms=env_ms("TICKWHEEL_WATCHDOG_UPDATE_EVERY_S", 300),
            run_grace_ms=env_ms("TICKWHEEL_WATCHDOG_RUN_GRACE_S", 30),
        )
    )
