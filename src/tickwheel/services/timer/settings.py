"""The timer service's settings, declared once (decision 0215): each field's variable, how it
is read, its default and what it means. A bad value stops the service with one line naming
the variable and what it accepts."""

from __future__ import annotations

import random
from dataclasses import dataclass

from tickwheel.core.definition import DEFAULT_MAX_PAYLOAD_BYTES
from tickwheel.services.environment import (
    Seconds,
    Text,
    Whole,
    bootstrap_setting,
    instance_setting,
    log_level_setting,
    metrics_addr_setting,
    metrics_port_setting,
    setting,
)
from tickwheel.services.timer.scheduler import PartitionTimer
from tickwheel.topology import topic_name


def _group() -> str:
    return topic_name("tickwheel-timer")


@dataclass(frozen=True)
class TimerSettings:
    """How one timer process runs; `from_env(TimerSettings)` reads the environment."""

    instance: str = instance_setting("timer")
    bootstrap: str = bootstrap_setting()
    group_id: str = setting(
        "TICKWHEEL_TIMER_GROUP",
        Text(),
        help="the timers' consumer group",
        flag="--group",
        default_factory=_group,
        shown="<prefix>tickwheel-timer",
    )
    horizon_ms: int = setting(
        "TICKWHEEL_TIMER_HORIZON_S",
        Seconds(as_ms=True),
        3_600_000,
        "how far ahead occurrences are held in the timing wheel, seconds",
        flag="--horizon-s",
    )
    tick_ms: int = setting("TICKWHEEL_TIMER_TICK_MS", Whole(), 50, "the timer's tick, ms")
    max_batch: int = setting("TICKWHEEL_TIMER_MAX_BATCH", Whole(), 5000, "records one poll reads")
    metrics_port: int = metrics_port_setting()
    metrics_addr: str = metrics_addr_setting()
    log_level: str = log_level_setting()
    tenant_max_in_flight: int = setting(
        "TICKWHEEL_TENANT_MAX_IN_FLIGHT",
        Whole(),
        10_000,
        "most executions of one tenant in flight per partition",
    )
    misfire_grace_ms: int = setting(
        "TICKWHEEL_MISFIRE_GRACE_MS",
        Whole(minimum=0),
        60_000,
        "how late an occurrence may fire and still count as on time, ms",
    )
    lease_seconds: int = setting(
        "TICKWHEEL_LEASE_SECONDS", Whole(), 30, "an attempt's lease, seconds"
    )
    heartbeat_seconds: int = setting(
        "TICKWHEEL_HEARTBEAT_SECONDS", Whole(), 10, "how often a worker renews a lease, seconds"
    )
    retry_base_ms: int = setting(
        "TICKWHEEL_RETRY_BASE_MS", Whole(minimum=0), 1000, "the first retry's backoff, ms"
    )
    # How long a fired job's state may wait for a quiet tick (decision 0008); 0 = the next one.
    state_lag_ms: int = setting(
        "TICKWHEEL_TIMER_STATE_LAG_MS",
        Whole(minimum=0),
        0,
        "how long a fired job's state may wait for a quiet tick, ms; 0 = the next tick",
    )
    retry_cap_ms: int = setting(
        "TICKWHEEL_RETRY_CAP_MS", Whole(minimum=0), 300_000, "the longest retry backoff, ms"
    )
    # The SDK's payload limit (the same variable): the timer applies the same rules.
    max_payload_bytes: int = setting(
        "TICKWHEEL_MAX_PAYLOAD_BYTES",
        Whole(),
        DEFAULT_MAX_PAYLOAD_BYTES,
        "the largest payload a job definition may carry, bytes",
    )
    dispatch_timeout_ms: int = setting(
        "TICKWHEEL_TIMER_DISPATCH_TIMEOUT_S",
        Seconds(as_ms=True),
        900_000,
        "a request not leased within it is re-issued, then dead-lettered (decision 0055), seconds",
        flag="--dispatch-timeout-s",
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
