"""The single writer's settings, declared once (decision 0215): each field's variable, how it
is read, its default and what it means. A bad value stops the service with one line naming
the variable and what it accepts."""

from __future__ import annotations

from dataclasses import dataclass

from tickwheel.services.environment import (
    Duration,
    Text,
    Whole,
    bootstrap_setting,
    instance_setting,
    log_level_setting,
    metrics_addr_setting,
    metrics_port_setting,
    setting,
)
from tickwheel.topology import topic_name

TTL_VAR = "TICKWHEEL_JOBWRITER_COMMAND_TTL"
DEFAULT_TTL = "10m"


def _group() -> str:
    return topic_name("tickwheel-jobwriter")


@dataclass(frozen=True)
class JobWriterSettings:
    """How one job writer process runs; `from_env(JobWriterSettings)` reads the environment."""

    instance: str = instance_setting("jobwriter")
    bootstrap: str = bootstrap_setting()
    group_id: str = setting(
        "TICKWHEEL_JOBWRITER_GROUP",
        Text(),
        help="the job writers' consumer group",
        flag="--group",
        default_factory=_group,
        shown="<prefix>tickwheel-jobwriter",
    )
    max_batch: int = setting(
        "TICKWHEEL_JOBWRITER_MAX_BATCH",
        Whole(),
        1000,
        "commands one poll reads over every owned partition",
    )
    poll_ms: int = setting(
        "TICKWHEEL_JOBWRITER_POLL_MS",
        Whole(),
        20,
        "how long an idle poll waits, ms; the first command ends the wait",
    )
    command_ttl_ms: int = setting(
        TTL_VAR,
        Duration(),
        600_000,
        "a command older than this when judged is answered invalid/expired instead of "
        "applied: its writer gave up long ago",
        flag="--command-ttl",
    )
    metrics_port: int = metrics_port_setting()
    metrics_addr: str = metrics_addr_setting()
    log_level: str = log_level_setting()
