"""The timer service's settings, from the environment. A bad value stops the service with one
line naming the variable and what it accepts."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.environment import env_int, env_ms
from tickwheel.services.timer.scheduler import PartitionTimer
from tickwheel.topology import topic_name


@dataclass
class TimerSettings:
    """Environment: TICKWHEEL_TIMER_HORIZON_S, TICKWHEEL_TIMER_TICK_MS,
    TICKWHEEL_TIMER_MAX_BATCH, TICKWHEEL_METRICS_PORT (0 = off), TICKWHEEL_TIMER_GROUP,
    TICKWHEEL_TENANT_MAX_IN_FLIGHT, TICKWHEEL_MISFIRE_GRACE_MS, TICKWHEEL_RETRY_BASE_MS,
    TICKWHEEL_RETRY_CAP_MS, TICKWHEEL_LEASE_SECONDS, TICKWHEEL_HEARTBEAT_SECONDS,
    TICKWHEEL_TIMER_STATE_LAG_MS, TICKWHEEL_TIMER_DISPATCH_TIMEOUT_S (a request not leased
    within it is re-issued, then dead-lettered; docs/decisions/0055)."""

    instance: str = "timer"
    bootstrap: str = field(default_factory=bootstrap_servers)
    group_id: str = field(
        default_factory=lambda: os.environ.get(
            "TICKWHEEL_TIMER_GROUP", topic_name("tickwheel-timer")
        )
    )
    horizon_ms: int = field(
        default_factory=lambda: env_ms("TICKWHEEL_TIMER_HORIZON_S", 3600, zero_ok=False)
    )
    tick_ms: int = field(default_factory=lambda: env_int("TICKWHEEL_TIMER_TICK_MS", 50))
    max_batch: int = field(default_factory=lambda: env_int("TICKWHEEL_TIMER_MAX_BATCH", 5000))
    metrics_port: int = field(
        default_factory=lambda: env_int("TICKWHEEL_METRICS_PORT", 0, minimum=0)
    )
    tenant_max_in_flight: int = field(
        default_factory=lambda: env_int("TICKWHEEL_TENANT_MAX_IN_FLIGHT", 10000)
    )
    misfire_grace_ms: int = field(
        default_factory=lambda: env_int("TICKWHEEL_MISFIRE_GRACE_MS", 60000, minimum=0)
    )
    lease_seconds: int = field(default_factory=lambda: env_int("TICKWHEEL_LEASE_SECONDS", 30))
    heartbeat_seconds: int = field(
        default_factory=lambda: env_int("TICKWHEEL_HEARTBEAT_SECONDS", 10)
    )
    retry_base_ms: int = field(
        default_factory=lambda: env_int("TICKWHEEL_RETRY_BASE_MS", 1000, minimum=0)
    )
    # How long a fired job's state may wait for a quiet tick (decision 0008); 0 = the next one.
    state_lag_ms: int = field(
        default_factory=lambda: env_int("TICKWHEEL_TIMER_STATE_LAG_MS", 0, minimum=0)
    )
    retry_cap_ms: int = field(
        default_factory=lambda: env_int("TICKWHEEL_RETRY_CAP_MS", 300000, minimum=0)
    )
    # The SDK's payload limit (the same variable): the timer applies the same rules.
    max_payload_bytes: int = field(
        default_factory=lambda: env_int("TICKWHEEL_MAX_PAYLOAD_BYTES", 64 * 1024)
    )
    dispatch_timeout_ms: int = field(
        default_factory=lambda: env_ms("TICKWHEEL_TIMER_DISPATCH_TIMEOUT_S", 900, zero_ok=False)
    )

    def partition_timer(self, partition: int, now_ms: int, rng: random.Random) -> PartitionTimer:
        """The scheduler of one partition, as these settings configure it."""
        return PartitionTimer(
            partition,
            self.horizon_ms,
            self.tick_ms,
            now_ms,
            self.max_batch,
            rng=rng,
            tenant_max_in_flight=self.tenant_max_in_flight,
            retry_base_ms=self.retry_base_ms,
            retry_cap_ms=self.retry_cap_ms,
            misfire_grace_ms=self.misfire_grace_ms,
            lease_seconds=self.lease_seconds,
            heartbeat_seconds=self.heartbeat_seconds,
            dispatch_timeout_ms=self.dispatch_timeout_ms,
        )
