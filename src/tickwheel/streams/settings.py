"""faust App settings that are safe against tickwheel's topics, and the topics' names."""

from __future__ import annotations

import os
from typing import Any

from tickwheel.topology import load_topology, topic_name


def topic_names() -> dict[str, str]:
    """Every declared topic's logical name → its name on the cluster (with the prefix)."""
    prefix = topic_name("")
    return {spec.name.removeprefix(prefix): spec.name for spec in load_topology()}


def app_settings(bootstrap: str | None = None, **overrides: Any) -> dict[str, Any]:
    """Settings for `faust.App(...)`: at-least-once (faust-streaming's exactly-once mode writes
    outputs outside its transaction — decision 0081), no web server, loopback if one is turned
    on, in-memory tables, reading from the start of a topic it has never read."""
    servers = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or "127.0.0.1:9092"
    settings: dict[str, Any] = {
        "broker": ",".join(f"kafka://{server}" for server in servers.split(",")),
        "processing_guarantee": "at_least_once",
        "web_enabled": False,
        "web_bind": "127.0.0.1",
        "store": "memory://",
        "consumer_auto_offset_reset": "earliest",
        "topic_replication_factor": int(os.environ.get("TICKWHEEL_REPLICATION_FACTOR", "1")),
        "broker_session_timeout": 10,
    }
    settings.update(overrides)
    return settings
