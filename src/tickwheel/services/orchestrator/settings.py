"""The orchestrator's settings, declared once (decision 0215): each field's variable, how it
is read, its default and what it means. A bad value stops the service with one line naming
the variable and what it accepts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tickwheel.core.targets import IPNetwork
from tickwheel.sdk.workflows import approval_keys
from tickwheel.services.environment import (
    Duration,
    Items,
    Seconds,
    Text,
    Using,
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
from tickwheel.services.webhooks import allowed_networks
from tickwheel.topology import topic_name

RETENTION_VAR = "TICKWHEEL_ORCHESTRATOR_RETENTION"
WEBHOOKS_VAR = "TICKWHEEL_APPROVAL_WEBHOOKS"
WEBHOOK_SECRET_VAR = "TICKWHEEL_APPROVAL_WEBHOOK_SECRET"
WEBHOOK_NETWORKS_VAR = "TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS"
LINK_VAR = "TICKWHEEL_APPROVAL_LINK"
KEYS_VAR = "TICKWHEEL_APPROVAL_KEYS"
DEFAULT_RETENTION = "7d"


def _group() -> str:
    return topic_name("tickwheel-orchestrator")


def _keys(name: str, text: str) -> dict[str, bytes]:
    return approval_keys(text)


def _backoff(first: float, cap: float) -> tuple[float, float]:
    return (first, cap)


@dataclass(frozen=True)
class OrchestratorSettings:
    """How one orchestrator process runs; `from_env(OrchestratorSettings)` reads the
    environment. Approval webhooks: decision 0132."""

    instance: str = instance_setting("orchestrator")
    bootstrap: str = bootstrap_setting()
    group_id: str = setting(
        "TICKWHEEL_ORCHESTRATOR_GROUP",
        Text(),
        help="the orchestrators' consumer group",
        flag="--group",
        default_factory=_group,
        shown="<prefix>tickwheel-orchestrator",
    )
    max_batch: int = setting(
        "TICKWHEEL_ORCHESTRATOR_MAX_BATCH",
        Whole(),
        500,
        "inputs one poll reads, over every owned partition",
    )
    poll_ms: int = setting(
        "TICKWHEEL_ORCHESTRATOR_POLL_MS",
        Whole(),
        10,
        "how long an idle poll waits for an input, ms; it returns at the first (decision 0131)",
    )
    retention_ms: int = setting(
        RETENTION_VAR,
        Duration(),
        7 * 86_400_000,
        "how long a finished instance stays in memory and on workflows.state before it is "
        "pruned: operators can repair a failed instance until then (decision 0095)",
        flag="--retention",
    )
    metrics_port: int = metrics_port_setting()
    metrics_addr: str = metrics_addr_setting()
    log_level: str = log_level_setting()
    # `setting` returns a dataclasses.field, its list made afresh for each instance.
    approval_webhooks: list[str] = setting(  # noqa: RUF009
        WEBHOOKS_VAR, Items(), [], "approval webhooks: comma-separated URLs"
    )
    approval_webhook_secret: str = setting(
        WEBHOOK_SECRET_VAR,
        Text(),
        "",
        "the webhooks' secret, `whsec_` + base64 (with URLs)",
        shown="",
    )
    approval_webhook_networks: tuple[IPNetwork, ...] = setting(
        WEBHOOK_NETWORKS_VAR,
        Using(allowed_networks, lambda v: ",".join(map(str, v))),
        (),
        "comma-separated CIDRs a receiver may be in besides public addresses",
        flag="--approval-webhook-allowed-networks",
    )
    approval_webhook_backoff_s: tuple[float, float] = group(
        _backoff,
        first=var(
            "TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S",
            Seconds(),
            1.0,
            "an approval webhook's first retry waits this long, seconds",
            flag="--approval-webhook-backoff-s",
        ),
        cap=var(
            "TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_CAP_S",
            Seconds(),
            300.0,
            "the longest wait between an approval webhook's retries, seconds",
            flag="--approval-webhook-backoff-cap-s",
        ),
    )
    approval_link: str | None = setting(
        LINK_VAR,
        Text(),
        None,
        "an approval round's link, a URL with {token}; none: the CLI command",
    )
    approval_keys: Mapping[str, bytes] = setting(
        KEYS_VAR,
        Using(_keys),
        {},
        "keys that sign approval links: kid:secret[,kid:secret...]",
        shown="",
    )
