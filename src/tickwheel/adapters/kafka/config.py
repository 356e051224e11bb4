"""Client settings shared by every tickwheel Kafka producer and consumer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tickwheel.paths import state_home

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
# Where `tickwheel stack up` records what it runs (tickwheel.stack.supervisor writes it; read
# here as plain JSON so that the adapter does not depend on the stack package).
STACK_STATUS = Path("stack") / "status.json"

# librdkafka's syslog levels: 3 is where it prints each refused connection, on every retry.
_QUIET_LOG_LEVEL = 2
_client_overrides: dict[str, Any] = {}


def bootstrap_servers() -> str:
    """The cluster to talk to: `KAFKA_BOOTSTRAP_SERVERS` when set, else the address the running
    local stack recorded (`tickwheel stack up --kafka-port N`), else 127.0.0.1:9092."""
    return bootstrap_source()[0]


def bootstrap_source() -> tuple[str, str]:
    """`bootstrap_servers()` and where it came from, in words an error message can quote."""
    explicit = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if explicit:
        return explicit, "from KAFKA_BOOTSTRAP_SERVERS"
    recorded = recorded_stack_bootstrap()
    if recorded:
        return recorded, f"the running local stack's, recorded in {state_home() / STACK_STATUS}"
    return DEFAULT_BOOTSTRAP, "the default; no local stack is running"


def recorded_stack_bootstrap(home: Path | None = None) -> str | None:
    """The broker address of the local stack whose supervisor is alive, if any."""
    path = (home or state_home()) / STACK_STATUS
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    pid, bootstrap = document.get("supervisor_pid"), document.get("bootstrap_servers")
    if not isinstance(pid, int) or not isinstance(bootstrap, str) or not bootstrap:
        return None
    # A stopped (or killed) stack's address would only send the client to a dead port.
    return bootstrap if _alive(pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def quiet_client_logs() -> None:
    """For one-shot commands: clients made from here on drop librdkafka's own log lines (a
    refused connection is printed on every retry, many times a second). Failures still reach
    the caller as exceptions, and the CLI turns them into one line."""
    _client_overrides["log_level"] = _QUIET_LOG_LEVEL


def client_overrides() -> dict[str, Any]:
    """Settings every client of this process takes (see `quiet_client_logs`)."""
    return dict(_client_overrides)


# How soon a client sees partitions a resize added (decision 0211): a producer then places keys
# by the new count, a group's members are assigned the new partitions. librdkafka's default is
# 5 minutes; a metadata request every 10 s per client costs a broker nothing it notices.
METADATA_REFRESH_MS = 10_000


def producer_config(bootstrap: str | None = None, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        # Java-compatible partitioning, so Java and Python producers place a key on the same
        # partition (confluent-kafka's default, consistent_random, does not).
        "partitioner": "murmur2_random",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "compression.type": "lz4",
        "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS,
        **_client_overrides,
    }
    config.update(overrides)
    return config


def transactional_producer_config(
    transactional_id: str, bootstrap: str | None = None, **overrides: Any
) -> dict[str, Any]:
    return producer_config(
        bootstrap,
        **{"transactional.id": transactional_id, "transaction.timeout.ms": 30000, **overrides},
    )


# For a consumer that reads everything and batches anyway (the history sink, the watchdog): a
# fetch waits for 256 KiB (about 1,500 records) or 100 ms, not for the first byte. At pipeline
# rates fetch.min.bytes=1 has the broker answer a stream of tiny fetches, about 14 µs of its
# CPU per record read (decision 0172); a quiet topic's record waits at most the 100 ms.
BULK_READER_FETCH: dict[str, int] = {"fetch.min.bytes": 262_144, "fetch.wait.max.ms": 100}


def consumer_config(
    group_id: str, bootstrap: str | None = None, **overrides: Any
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        "group.id": group_id,
        # Only committed transactional writes are visible: the exactly-once trigger depends on it.
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS,
        **_client_overrides,
    }
    config.update(overrides)
    return config
