"""The copies the topology declares (issue 31 item 2): a replication factor and
`min.insync.replicas` per topic, from topics.toml or the environment, and a cluster below
either refused with one line per difference; one above them is not a difference."""

from __future__ import annotations

import dataclasses

import pytest

from tickwheel.topology import ObservedTopic, differences, load_topology


def _as_declared(specs: list, **changes: object) -> dict[str, ObservedTopic]:
    return {
        s.name: dataclasses.replace(
            ObservedTopic(s.name, s.partitions, s.configs(), s.replication_factor), **changes
        )
        for s in specs
    }


def test_a_replicated_topology_declares_three_copies_and_two_in_sync(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TICKWHEEL_REPLICATION_FACTOR", "3")
    specs = load_topology()
    assert {(s.replication_factor, s.min_insync_replicas) for s in specs} == {(3, 2)}
    assert all(s.configs()["min.insync.replicas"] == "2" for s in specs)
    monkeypatch.setenv("TICKWHEEL_MIN_INSYNC_REPLICAS", "3")
    assert {s.min_insync_replicas for s in load_topology()} == {3}


def test_one_node_declares_one_copy_and_one_in_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TICKWHEEL_REPLICATION_FACTOR", raising=False)
    monkeypatch.delenv("TICKWHEEL_MIN_INSYNC_REPLICAS", raising=False)
    assert {(s.replication_factor, s.min_insync_replicas) for s in load_topology()} == {(1, 1)}


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"TICKWHEEL_REPLICATION_FACTOR": "three"}, "TICKWHEEL_REPLICATION_FACTOR: 'three'"),
        ({"TICKWHEEL_REPLICATION_FACTOR": "0"}, "a whole number of 1 or more"),
        (
            {"TICKWHEEL_REPLICATION_FACTOR": "3", "TICKWHEEL_MIN_INSYNC_REPLICAS": "4"},
            "min_insync_replicas (4) cannot exceed replication_factor (3)",
        ),
    ],
)
def test_a_bad_number_of_copies_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], message: str
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as refused:
        load_topology()
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_cluster_below_the_declared_copies_is_refused_naming_each_topic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TICKWHEEL_REPLICATION_FACTOR", "3")
    specs = load_topology()
    assert differences(specs, _as_declared(specs)) == []
    weak = _as_declared(specs, replication_factor=1, configs={"min.insync.replicas": "1"})
    problems = differences(specs, weak)
    name = specs[0].name
    assert f"topic '{name}' has 1 replicas of a partition, topology declares 3" in problems
    assert f"topic '{name}' has min.insync.replicas=1, topology declares 2" in problems
    assert len(problems) == 2 * len(specs)


def test_a_cluster_above_the_declared_copies_is_not_a_difference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TICKWHEEL_REPLICATION_FACTOR", "3")
    specs = load_topology()
    strong = {
        name: dataclasses.replace(
            seen, replication_factor=5, configs={**seen.configs, "min.insync.replicas": "3"}
        )
        for name, seen in _as_declared(specs).items()
    }
    assert differences(specs, strong) == []
