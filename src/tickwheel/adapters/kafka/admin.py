"""Create and verify the declared topology on a Kafka cluster."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.errors import TopologyMismatch
from tickwheel.topology import ObservedTopic, TopicSpec, differences, load_topology


def admin_client(bootstrap: str | None = None, quiet: bool = False) -> AdminClient:
    config: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap or bootstrap_servers()
    }
    if quiet:
        # A health probe expects refusals while the broker starts; keep them out of the logs.
        config["log_level"] = 0
    return AdminClient(config)


def cluster_metadata_ok(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the cluster answers a metadata request with at least one broker."""
    try:
        metadata = admin_client(bootstrap, quiet=True).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return bool(metadata.brokers)


def observe(specs: list[TopicSpec], bootstrap: str | None = None) -> dict[str, ObservedTopic]:
    """What the cluster has for the declared topics: partition counts and relevant configs."""
    admin = admin_client(bootstrap)
    metadata = admin.list_topics(timeout=10)
    present = [s for s in specs if s.name in metadata.topics]
    configs: dict[str, dict[str, str]] = {}
    if present:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, s.name) for s in present]
        for resource, future in admin.describe_configs(resources).items():
            entries = future.result(timeout=10)
            configs[resource.name] = {
                key: entry.value
                for key, entry in entries.items()
                if key in ("cleanup.policy", "retention.ms")
            }
    return {
        s.name: ObservedTopic(
            name=s.name,
            partitions=len(metadata.topics[s.name].partitions),
            configs=configs.get(s.name, {}),
        )
        for s in present
    }


def apply_topology(specs: list[TopicSpec] | None = None, bootstrap: str | None = None) -> list[str]:
    """Create every missing topic, then verify the whole topology. Returns the topics created.

    Idempotent: a second call creates nothing. Raises TopologyMismatch when an existing topic
    differs (tickwheel never repartitions or reconfigures a topic behind an operator's back).
    """
    specs = specs or load_topology()
    admin = admin_client(bootstrap)
    observed = observe(specs, bootstrap)
    missing = [s for s in specs if s.name not in observed]
    created: list[str] = []
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(
                    s.name,
                    num_partitions=s.partitions,
                    replication_factor=s.replication_factor,
                    config=s.configs(),
                )
                for s in missing
            ],
            operation_timeout=30,
        )
        for name, future in futures.items():
            try:
                future.result(timeout=30)
                created.append(name)
            except KafkaException as exc:
                # Another process may have created it between observe and create.
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
    verify_topology(specs, bootstrap)
    return created


def verify_topology(specs: list[TopicSpec] | None = None, bootstrap: str | None = None) -> None:
    """Raise TopologyMismatch naming every difference; services call this at start-up."""
    specs = specs or load_topology()
    problems = differences(specs, observe(specs, bootstrap))
    if problems:
        raise TopologyMismatch(problems)
