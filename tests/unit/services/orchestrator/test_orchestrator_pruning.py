"""A finished instance leaves the orchestrator's memory after the retention (its snapshot is
tombstoned with the partition's next batch), never before and never while it is open; a late
input for it is dead-lettered saying it was pruned rather than starting it again; a restore
reads tombstones and finished snapshots the same way (decision 0095). And the orchestrator's
metrics are aggregates: their series do not grow with the number of instances."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from tests.unit.services.orchestrator.test_orchestrator import _catalog
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.workflow import Cancel, Start, StepSucceeded
from tickwheel.core.workflow.inputs import Input
from tickwheel.core.workflow.wire import input_record
from tickwheel.services.orchestrator.metrics import OrchestratorMetrics
from tickwheel.services.orchestrator.partition import PartitionOrchestrator
from tickwheel.services.orchestrator.records import snapshot_record

ONE_STEP = {"definitionId": "one", "version": 1, "steps": [{"id": "a", "type": "noop"}]}
TWO_STEPS = {"definitionId": "two", "version": 1, "steps": [
    {"id": "a", "type": "noop"}, {"id": "b", "type": "noop", "dependsOn": ["a"]}]}  # fmt: skip
RETENTION = 60_000
T0 = 1_764_590_400_000


class Feed:
    """Records of workflows.inputs for one partition orchestrator, with rising offsets."""

    def __init__(self, orchestrator: PartitionOrchestrator) -> None:
        self.orchestrator = orchestrator
        self.offset = 0

    def send(self, workflow_id: str, item: Input, definition: dict[str, Any] | None = None
             ) -> None:  # fmt: skip
        start = {} if definition is None else {"definition_id": definition["definitionId"],
                                               "definition_version": definition["version"]}  # fmt: skip
        value = encode("WorkflowInput", input_record(workflow_id, item, f"in-{self.offset}",
                                                     **start))  # fmt: skip
        record = Record("workflows.inputs", 0, self.offset, workflow_id, value, item.at_ms)
        self.offset += 1
        self.orchestrator.receive(record, item.at_ms)


def orchestrator() -> tuple[PartitionOrchestrator, Feed]:
    partition = PartitionOrchestrator(0, 6, _catalog(ONE_STEP, TWO_STEPS), RETENTION)
    return partition, Feed(partition)


def finish(feed: Feed, workflow_id: str, at_ms: int) -> None:
    feed.send(workflow_id, Start(at_ms, None), ONE_STEP)
    feed.send(workflow_id, StepSucceeded(at_ms + 10, "a", 1))


def test_a_finished_instance_is_pruned_once_the_retention_has_passed_and_not_before() -> None:
    partition, feed = orchestrator()
    finish(feed, "wf-1", T0)
    assert partition.finished == {"wf-1": T0 + 10}
    partition.take()
    assert partition.prune_due(T0 + 10 + RETENTION - 1) == 0
    assert "wf-1" in partition.instances and not partition.take().pruned
    assert partition.prune_due(T0 + 10 + RETENTION) == 1
    batch = partition.take()
    assert batch.pruned == ["wf-1"] and "wf-1" not in batch.states
    assert "wf-1" not in partition.instances and not partition.finished
    assert partition.open_instances == 0


def test_an_open_instance_is_never_pruned() -> None:
    partition, feed = orchestrator()
    feed.send("wf-open", Start(T0, None), TWO_STEPS)
    feed.send("wf-open", StepSucceeded(T0 + 10, "a", 1))  # b is running
    assert partition.prune_due(T0 + 100 * RETENTION) == 0
    assert partition.state("wf-open") is not None and partition.open_instances == 1


def test_a_late_input_for_a_pruned_instance_is_dead_lettered_and_does_not_start_it_again() -> None:
    partition, feed = orchestrator()
    finish(feed, "wf-1", T0)
    partition.prune_due(T0 + 10 + RETENTION)
    partition.take()
    late = T0 + 10 + RETENTION + 5
    feed.send("wf-1", StepSucceeded(late, "a", 1))  # the timer's outcome, redelivered
    feed.send("wf-1", Start(late + 1, None), ONE_STEP)  # a start sent again
    feed.send("wf-1", Cancel(late + 2, "ops", "late"))
    batch = partition.take()
    assert not batch.events and not batch.states and not batch.outgoing
    reasons = [letter["reason"] for letter in batch.dead_letters]
    assert len(reasons) == 3
    assert all("'wf-1' finished and was pruned after the retention of 1m" in r for r in reasons)
    assert "a start for it is not applied" in reasons[1]
    assert partition.state("wf-1") is None


def test_a_late_input_to_a_finished_instance_starts_its_retention_again() -> None:
    partition, feed = orchestrator()
    finish(feed, "wf-1", T0)
    feed.send("wf-1", StepSucceeded(T0 + 30_000, "a", 1))  # a duplicate: recorded, fenced
    assert partition.finished == {"wf-1": T0 + 30_000}
    assert partition.prune_due(T0 + 10 + RETENTION) == 0
    assert partition.prune_due(T0 + 30_000 + RETENTION) == 1


def test_a_pruned_id_is_forgotten_after_one_more_retention_and_may_then_start_afresh() -> None:
    partition, feed = orchestrator()
    finish(feed, "wf-1", T0)
    pruned_at = T0 + 10 + RETENTION
    partition.prune_due(pruned_at)
    partition.prune_due(pruned_at + RETENTION - 1)
    assert "wf-1" in partition.pruned
    partition.prune_due(pruned_at + RETENTION)
    assert "wf-1" not in partition.pruned
    partition.take()
    feed.send("wf-1", Start(pruned_at + RETENTION + 1, None), ONE_STEP)
    batch = partition.take()
    assert not batch.dead_letters and [e["event_type"] for e in batch.events][:1] == [
        "workflow_started"
    ]


def test_a_restore_reads_tombstones_as_pruned_and_finished_snapshots_as_waiting_to_be() -> None:
    partition, feed = orchestrator()
    finish(feed, "wf-done", T0)
    feed.send("wf-open", Start(T0, None), TWO_STEPS)
    snapshots = {
        wid: decode(encode("WorkflowSnapshot", snapshot_record(state, at)), "WorkflowSnapshot")[1]
        for wid, (state, at) in partition.take().states.items()
    }
    heir = PartitionOrchestrator(0, 6, _catalog(ONE_STEP, TWO_STEPS), RETENTION)
    heir.load("wf-gone", snapshots["wf-open"], T0)  # a snapshot of it, then
    heir.load("wf-gone", None, T0 + 1)  # its tombstone, later in the log
    for workflow_id, snapshot in snapshots.items():
        heir.load(workflow_id, snapshot, T0 + 1)
    assert heir.pruned == {"wf-gone": T0 + 1} and "wf-gone" not in heir.instances
    assert heir.finished == {"wf-done": T0 + 10} and heir.open_instances == 1
    assert heir.prune_due(T0 + 10 + RETENTION) == 1 and heir.take().pruned == ["wf-done"]


def scrape(metrics: OrchestratorMetrics) -> list[str]:
    text = generate_latest(metrics.registry).decode()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def series_after(instances: int) -> list[str]:
    partition, feed = orchestrator()
    for n in range(instances):
        finish(feed, f"wf-{n}", T0 + n)
        feed.send(f"open-{n}", Start(T0 + n, None), TWO_STEPS)
    batch = partition.take()
    metrics = OrchestratorMetrics()
    metrics.observe_instances(partition.open_instances, len(partition.finished))
    metrics.observe_transaction("committed", 0.02)
    metrics.events.inc(len(batch.events))
    metrics.step_transitions.inc(batch.step_transitions())
    metrics.inputs.labels("folded").inc(batch.inputs)
    return scrape(metrics)


def test_metrics_are_aggregates_whose_series_do_not_grow_with_instances() -> None:
    few, many = series_after(2), series_after(200)
    assert len(few) == len(many)
    assert not any("wf-" in line or "open-" in line for line in many)
    assert 'tickwheel_orchestrator_instances{state="open"} 200.0' in many
    assert 'tickwheel_orchestrator_instances{state="finished"} 200.0' in many
    # Per finished one: a scheduled, a succeeded; per open one: a scheduled.
    assert "tickwheel_orchestrator_step_transitions_total 600.0" in many
    assert 'tickwheel_orchestrator_transactions_total{outcome="committed"} 1.0' in many
