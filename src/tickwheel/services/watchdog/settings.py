"""The watchdog's settings, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.core.watchdog import Thresholds


def _seconds_ms(name: str, default: float) -> int:
    return int(float(os.environ.get(name, default)) * 1000)


@dataclass
class WatchdogSettings:
    """Environment: TICKWHEEL_WATCHDOG_TICK_MS (evaluation tick), TICKWHEEL_WATCHDOG_LATENESS_S
    (how far the watermark trails the inputs, for records produced but not yet readable),
    TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S, TICKWHEEL_WATCHDOG_UPDATE_EVERY_S,
    TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S, TICKWHEEL_WATCHDOG_READY_AGE_S,
    TICKWHEEL_WATCHDOG_GRACE_S (slack of a derived interval), TICKWHEEL_METRICS_PORT (0 = off)."""

    instance: str = "watchdog"
    bootstrap: str = field(default_factory=bootstrap_servers)
    tick_ms: int = field(
        default_factory=lambda: int(os.environ.get("TICKWHEEL_WATCHDOG_TICK_MS", "1000"))
    )
    lateness_ms: int = field(
        default_factory=lambda: _seconds_ms("TICKWHEEL_WATCHDOG_LATENESS_S", 2.0)
    )
    metrics_port: int = field(
        default_factory=lambda: int(os.environ.get("TICKWHEEL_METRICS_PORT", "0"))
    )
    thresholds: Thresholds = field(
        default_factory=lambda: Thresholds(
            dead_letter_age_ms=_seconds_ms("TICKWHEEL_WATCHDOG_DEAD_LETTER_AGE_S", 3600),
            oldest_ready_age_ms=_seconds_ms("TICKWHEEL_WATCHDOG_READY_AGE_S", 300),
            derived_grace_ms=_seconds_ms("TICKWHEEL_WATCHDOG_GRACE_S", 60),
            resolve_after_ms=_seconds_ms("TICKWHEEL_WATCHDOG_RESOLVE_AFTER_S", 60),
            update_every_ms=_seconds_ms("TICKWHEEL_WATCHDOG_UPDATE_EVERY_S", 300),
        )
    )
