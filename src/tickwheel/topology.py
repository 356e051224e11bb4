"""The declared Kafka topology (topology/topics.toml) as typed data, and how to compare it
with what a cluster reports. Pure: the Kafka adapter fetches the cluster's view."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from tickwheel.paths import project_root


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    key: str
    value_schema: str
    cleanup_policy: str
    retention_ms: int
    co_partition: str | None
    description: str = ""
    min_insync_replicas: int = 1

    def configs(self) -> dict[str, str]:
        return {
            "cleanup.policy": self.cleanup_policy,
            "retention.ms": str(self.retention_ms),
            "min.insync.replicas": str(self.min_insync_replicas),
        }


# Settings a cluster may hold above what the topology declares (more copies, more of them in
# sync) but never below: `differences` refuses only a weaker cluster.
AT_LEAST = ("min.insync.replicas",)


@dataclass(frozen=True)
class ObservedTopic:
    name: str
    partitions: int
    configs: dict[str, str]
    replication_factor: int | None = None  # the fewest copies of any partition; None: unknown


def topology_file() -> Path:
    override = os.environ.get("TICKWHEEL_TOPOLOGY_FILE")
    return Path(override) if override else project_root() / "topology" / "topics.toml"


def load_topology(path: Path | None = None) -> list[TopicSpec]:
    data = tomllib.loads((path or topology_file()).read_text())
    defaults = data.get("defaults", {})
    replication = _positive(
        "TICKWHEEL_REPLICATION_FACTOR", defaults.get("replication_factor", 1), "replication_factor"
    )
    # All copies but one must hold a write before it is acknowledged (two of three), unless
    # the file or the environment says otherwise.
    min_insync = _positive(
        "TICKWHEEL_MIN_INSYNC_REPLICAS",
        defaults.get("min_insync_replicas", max(1, replication - 1)),
        "min_insync_replicas",
    )
    if min_insync > replication:
        raise ValueError(
            f"topology: min_insync_replicas ({min_insync}) cannot exceed replication_factor "
            f"({replication}): no write could ever be acknowledged"
        )
    # A prefix lets several tickwheel installations (or test runs) share one cluster.
    prefix = os.environ.get("TICKWHEEL_TOPIC_PREFIX", "")
    specs = []
    for raw in data["topic"]:
        specs.append(
            TopicSpec(
                name=prefix + raw["name"],
                partitions=int(raw.get("partitions", defaults.get("partitions", 1))),
                replication_factor=replication,
                key=raw["key"],
                value_schema=raw["value_schema"],
                cleanup_policy=raw["cleanup_policy"],
                retention_ms=int(raw["retention_ms"]),
                co_partition=raw.get("co_partition"),
                description=raw.get("description", ""),
                min_insync_replicas=min_insync,
            )
        )
    declared_groups = _co_partition_problems(
        {s.name: s.partitions for s in specs}, specs, "declared"
    )
    if declared_groups:
        raise ValueError("topology/topics.toml is inconsistent: " + "; ".join(declared_groups))
    return specs


# The group whose count `tickwheel topology resize` grows (decision 0211): every topic keyed by
# job or workflow, owned partition by partition by the timer, orchestrator and job writer.
JOBS_GROUP = "jobs"
CHANGES_TOPIC = "topology.changes"


def group_partitions(specs: list[TopicSpec], group: str = JOBS_GROUP) -> int | None:
    """The partition count the topics of co-partition `group` declare (None: no such group)."""
    for spec in specs:
        if spec.co_partition == group:
            return spec.partitions
    return None


def with_group_partitions(specs: list[TopicSpec], group: str, partitions: int) -> list[TopicSpec]:
    """`specs` with every topic of co-partition `group` at `partitions`: the declaration after a
    resize recorded in the cluster (the file keeps the count the group started with)."""
    return [
        replace(spec, partitions=partitions) if spec.co_partition == group else spec
        for spec in specs
    ]


def _positive(variable: str, default: object, field: str) -> int:
    """A whole number of copies from the environment (`variable`) or the file (`field`)."""
    text = os.environ.get(variable, "").strip() or str(default)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        source = variable if os.environ.get(variable, "").strip() else f"topology: {field}"
        raise ValueError(f"{source}: {text!r} is not accepted; a whole number of 1 or more")
    return value


def topic_name(name: str) -> str:
    """The cluster's name for a declared topic (with `TICKWHEEL_TOPIC_PREFIX`)."""
    return os.environ.get("TICKWHEEL_TOPIC_PREFIX", "") + name


def topic(name: str, specs: list[TopicSpec] | None = None) -> TopicSpec:
    for spec in specs or load_topology():
        if spec.name == topic_name(name):
            return spec
    raise KeyError(f"topic {name!r} is not declared in topology/topics.toml")


def differences(specs: list[TopicSpec], observed: dict[str, ObservedTopic]) -> list[str]:
    """Every way the cluster differs from the declaration, each said plainly."""
    problems: list[str] = []
    for spec in specs:
        seen = observed.get(spec.name)
        if seen is None:
            problems.append(f"topic {spec.name!r} is missing")
            continue
        if seen.partitions != spec.partitions:
            problems.append(
                f"topic {spec.name!r} has {seen.partitions} partitions, "
                f"topology declares {spec.partitions}"
            )
        for key, want in spec.configs().items():
            have = seen.configs.get(key)
            if have is None or have == want:
                continue
            if key in AT_LEAST and have.isdigit() and int(have) > int(want):
                continue
            problems.append(f"topic {spec.name!r} has {key}={have}, topology declares {want}")
        copies = seen.replication_factor
        if copies is not None and copies < spec.replication_factor:
            problems.append(
                f"topic {spec.name!r} has {copies} replicas of a partition, "
                f"topology declares {spec.replication_factor}"
            )
    counts = {name: seen.partitions for name, seen in observed.items()}
    problems.extend(_co_partition_problems(counts, specs, "cluster"))
    return problems


def _co_partition_problems(counts: dict[str, int], specs: list[TopicSpec], where: str) -> list[str]:
    groups: dict[str, dict[str, int]] = {}
    for spec in specs:
        if spec.co_partition and spec.name in counts:
            groups.setdefault(spec.co_partition, {})[spec.name] = counts[spec.name]
    problems = []
    for group, members in sorted(groups.items()):
        if len(set(members.values())) > 1:
            listing = ", ".join(f"{n}={c}" for n, c in sorted(members.items()))
            problems.append(
                f"co-partitioned group {group!r} is not co-partitioned in the {where} "
                f"(partition counts: {listing})"
            )
    return problems
