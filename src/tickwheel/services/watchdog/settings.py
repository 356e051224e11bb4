"""The watchdog's settings, declared once (decision 0215): each field's variable, how it is
read, its default and what it means. Thresholds of 0 remove a slack or turn a check off."""

from __future__ import annotations

from dataclasses import dataclass

from tickwheel.core.targets import IPNetwork
from tickwheel.core.watchdog import Thresholds
from tickwheel.services.environment import (
    Items,
    Seconds,
    Text,
    Using,
    Var,
    Whole,
    bootstrap_setting,
    group,
    instance_setting,
    log_level_setting,
    metrics_addr_setting,
    metrics_port_setting,
    setting,
    var,
)
from tickwheel.services.webhooks import (
    ALERT_WEBHOOK_NETWORKS_VAR,
    ALERT_WEBHOOK_SECRET_VAR,
    ALERT_WEBHOOKS_VAR,
    allowed_networks,
)

MS = Seconds(zero_ok=True, as_ms=True)  # seconds in the variable, ms in the field; 0 = off


def _audit(every_ms: int, lookback_ms: int, jobs: int) -> tuple[int, int, int]:
    return (every_ms, lookback_ms, jobs)


def _backoff(first: float, cap: float) -> tuple[float, float]:
    return (first, cap)


def _seconds(env: str, default_s: float, help: str) -> Var:
    flag = "--" + env.removeprefix("TICKWHEEL_WATCHDOG_").lower().replace("_", "-")
    return var(env, MS, int(default_s * 1000), help, flag=flag)


@dataclass(frozen=True)
class WatchdogSettings:
    """How the watchdog runs; `from_env(WatchdogSettings)` reads the environment."""

    instance: str = instance_setting("watchdog")
    bootstrap: str = bootstrap_setting()
    tick_ms: int = setting("TICKWHEEL_WATCHDOG_TICK_MS", Whole(), 1000, "evaluation tick, ms")
    lateness_ms: int = setting(
        "TICKWHEEL_WATCHDOG_LATENESS_S",
        MS,
        2000,
        "how far the watermark trails the inputs (records produced, not yet readable), seconds",
        flag="--lateness-s",
    )
    freshness_every_ms: int = setting(
        "TICKWHEEL_WATCHDOG_FRESHNESS_EVERY_S",
        MS,
        30_000,
        "how often the output topics' newest records are read, seconds",
        flag="--freshness-every-s",
    )
    # The second detector: (every ms, lookback ms, jobs per round); every 0 = off.
    audit: tuple[int, int, int] = group(
        _audit,
        every_ms=_seconds(
            "TICKWHEEL_WATCHDOG_AUDIT_EVERY_S", 300, "the second detector's round, seconds; 0 = off"
        ),
        lookback_ms=_seconds(
            "TICKWHEEL_WATCHDOG_AUDIT_LOOKBACK_S", 86_400, "how far back it audits, seconds"
        ),
        jobs=var(
            "TICKWHEEL_WATCHDOG_AUDIT_JOBS",
            Whole(),
            50,
            "jobs audited per round",
            flag="--audit-jobs",
        ),
    )
    lag_alert_ms: int = setting(
        "TICKWHEEL_WATCHDOG_LAG_ALERT_S",
        MS,
        60_000,
        "watchdog_lagging: inputs this far behind for this long, seconds",
        flag="--lag-alert-s",
    )
    metrics_port: int = metrics_port_setting()
    metrics_addr: str = metrics_addr_setting()
    log_level: str = log_level_setting()
    # `setting` returns a dataclasses.field, its list made afresh for each instance.
    webhooks: list[str] = setting(  # noqa: RUF009
        ALERT_WEBHOOKS_VAR, Items(), [], "alert webhooks: comma-separated URLs"
    )
    webhook_secret: str = setting(
        ALERT_WEBHOOK_SECRET_VAR,
        Text(),
        "",
        "the webhooks' secret, `whsec_` + base64 (required with URLs)",
        shown="",
    )
    webhook_allowed_networks: tuple[IPNetwork, ...] = setting(
        ALERT_WEBHOOK_NETWORKS_VAR,
        Using(allowed_networks, lambda v: ",".join(map(str, v))),
        (),
        "comma-separated CIDRs a receiver may be in besides public addresses",
    )
    webhook_backoff_s: tuple[float, float] = group(
        _backoff,
        first=var(
            "TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_S",
            Seconds(),
            1.0,
            "a webhook's first retry waits this long, seconds",
            flag="--webhook-backoff-s",
        ),
        cap=var(
            "TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_CAP_S",
            Seconds(),
            300.0,
            "the longest wait between a webhook's retries, seconds",
            flag="--webhook-backoff-cap-s",
        ),
    )
    # `group` returns a dataclasses.field whose Thresholds are made afresh for each instance.
    thresholds: Thresholds = group(  # noqa: RUF009
        Thresholds,
        dead_letter_age_ms=_seconds(
            "TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S",
            3600,
            "a dead letter this old raises an alert, seconds",
        ),
        oldest_ready_age_ms=_seconds(
            "TICKWHEEL_WATCHDOG_READY_AGE_S",
            300,
            "a request waiting this long for a worker raises an alert, seconds",
        ),
        derived_grace_ms=_seconds(
            "TICKWHEEL_WATCHDOG_GRACE_S", 60, "slack of a derived interval, seconds"
        ),
        resolve_after_ms=_seconds(
            "TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S",
            60,
            "an alert resolves once its condition is gone this long, seconds",
        ),
        update_every_ms=_seconds(
            "TICKWHEEL_WATCHDOG_UPDATE_EVERY_S", 300, "how often a firing alert is re-sent, seconds"
        ),
        run_grace_ms=_seconds(
            "TICKWHEEL_WATCHDOG_RUN_GRACE_S",
            30,
            "how far past maxRunTime a run is too long, seconds",
        ),
    )
