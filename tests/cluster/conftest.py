"""The cluster tier: a real three-node Kafka cluster (KRaft, every node broker and controller,
from the same Maven jars as the one-node broker), started once for the tier, with the
topology applied at replication factor 3 and `min.insync.replicas` 2 under a fresh prefix per
test. `make test-cluster` runs it (`make test` does not: its broker faults take minutes)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tickwheel.stack.cluster import LocalCluster


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster.on_free_ports(tmp_path_factory.mktemp("cluster"), size=3)
    cluster.start(timeout=180)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_topology(kafka_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> str:
    """The declared topology, three copies of each partition, two in sync; returns the prefix.
    Every node is running first: a test may have left one down."""
    from tickwheel.adapters.kafka.admin import apply_topology

    for node_id in kafka_cluster.nodes:
        kafka_cluster.resume(node_id)
        if kafka_cluster.pid(node_id) is None:
            kafka_cluster.restart(node_id)
    prefix = f"c{uuid.uuid4().hex[:10]}."
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_cluster.bootstrap)
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", prefix)
    monkeypatch.setenv("TICKWHEEL_REPLICATION_FACTOR", "3")
    monkeypatch.setenv("TICKWHEEL_MIN_INSYNC_REPLICAS", "2")
    apply_topology(bootstrap=kafka_cluster.bootstrap)
    return prefix
