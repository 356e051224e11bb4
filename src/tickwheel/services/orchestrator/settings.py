"""The orchestrator's settings, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.topology import topic_name


@dataclass
class OrchestratorSettings:
    """Environment: TICKWHEEL_ORCHESTRATOR_GROUP (the consumer group),
    TICKWHEEL_ORCHESTRATOR_MAX_BATCH (inputs per partition transaction, default 500),
    TICKWHEEL_ORCHESTRATOR_POLL_MS (how long one poll waits for more inputs, default 10: it
    is on the path of every step-to-step hop)."""

    instance: str = "orchestrator"
    bootstrap: str = field(default_factory=bootstrap_servers)
    group_id: str = field(
        default_factory=lambda: os.environ.get(
            "TICKWHEEL_ORCHESTRATOR_GROUP", topic_name("tickwheel-orchestrator")
        )
    )
    max_batch: int = field(
        default_factory=lambda: int(os.environ.get("TICKWHEEL_ORCHESTRATOR_MAX_BATCH", "500"))
    )
    poll_ms: int = field(
        default_factory=lambda: int(os.environ.get("TICKWHEEL_ORCHESTRATOR_POLL_MS", "10"))
    )
