"""The single writer's settings, from the environment. A bad value stops the service with one
line naming the variable and what it accepts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.durations import parse_duration_ms
from tickwheel.environment import env_int
from tickwheel.errors import InvalidInput
from tickwheel.topology import topic_name

TTL_VAR = "TICKWHEEL_JOBWRITER_COMMAND_TTL"
DEFAULT_TTL = "10m"


def _ttl_ms() -> int:
    text = os.environ.get(TTL_VAR, DEFAULT_TTL)
    value = parse_duration_ms(text, TTL_VAR)
    if value < 1000:
        raise InvalidInput(TTL_VAR, f"{text!r} is under a second; accepted: e.g. '10m', '1h'")
    return value


@dataclass
class JobWriterSettings:
    """Environment: TICKWHEEL_JOBWRITER_GROUP (the consumer group, default
    `<prefix>tickwheel-jobwriter`), TICKWHEEL_JOBWRITER_MAX_BATCH (commands one poll reads
    over every owned partition, default 1000), TICKWHEEL_JOBWRITER_POLL_MS (how long an idle poll
    waits, default 20; the first command ends the wait),
    TICKWHEEL_JOBWRITER_COMMAND_TTL (a command older than this when judged is answered
    `invalid`/expired instead of applied: its writer gave up long ago; default 10m),
    TICKWHEEL_METRICS_PORT (Prometheus text format on `/metrics`, 0 = off, the default)."""

    instance: str = "jobwriter"
    bootstrap: str = field(default_factory=bootstrap_servers)
    group_id: str = field(
        default_factory=lambda: os.environ.get(
            "TICKWHEEL_JOBWRITER_GROUP", topic_name("tickwheel-jobwriter")
        )
    )
    max_batch: int = field(default_factory=lambda: env_int("TICKWHEEL_JOBWRITER_MAX_BATCH", 1000))
    poll_ms: int = field(default_factory=lambda: env_int("TICKWHEEL_JOBWRITER_POLL_MS", 20))
    command_ttl_ms: int = field(default_factory=_ttl_ms)
    metrics_port: int = field(
        default_factory=lambda: env_int("TICKWHEEL_METRICS_PORT", 0, minimum=0)
    )
