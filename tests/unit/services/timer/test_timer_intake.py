"""A loop turn returns at its first input (decision 0143): the timer waits for the next tick on
the consumer its hot hops arrive on (a workflow step's command, a worker's outcome), never by
`consume(n, timeout)`, which waits out the whole timeout for a batch it cannot fill; and an
input is decided and committed in the turn that read it, before the next tick is due.

The in-memory consumer never waits, so what is checked here is where the loop asks to wait
and for how long (a recording wrapper around the in-memory clients), and what one turn
commits. The figures are `bench/bench_workflows.py --parts latency`."""

from __future__ import annotations

import uuid
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.memory import MemoryClients
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.events import execution_event
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import topic as declared_topic
from tickwheel.topology import topic_name

from .test_timer_service_memory import GROUP, Cluster

PARTITIONS = declared_topic("jobs.definitions").partitions
TICK_MS = 50


class RecordingConsumer:
    """An in-memory consumer that notes every wait the loop asks of it."""

    def __init__(self, consumer: Any, name: str, waits: list[tuple[str, str, float]]) -> None:
        self._consumer, self._name, self._waits = consumer, name, waits

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Any:
        self._waits.append((self._name, "consume", timeout))
        return self._consumer.consume(num_messages, timeout)

    def poll(self, timeout: float = -1) -> Any:
        self._waits.append((self._name, "poll", timeout))
        return self._consumer.poll(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


class RecordingClients(MemoryClients):
    def __init__(self, broker: Any) -> None:
        super().__init__(broker)
        self.waits: list[tuple[str, str, float]] = []

    def consumer(self, group_id: str, **overrides: Any) -> Any:
        name = "inputs" if group_id.endswith("-inputs-unused") else "group"
        return RecordingConsumer(super().consumer(group_id, **overrides), name, self.waits)


def _served_timer(cluster: Cluster) -> tuple[TimerService, RecordingClients]:
    clients = RecordingClients(cluster.broker)
    settings = TimerSettings(instance="a", bootstrap="memory", group_id=GROUP,
                             tick_ms=TICK_MS, metrics_port=0)  # fmt: skip
    timer = TimerService(settings, clock=cluster.clock, clients=clients, inline=True)
    timer.start()
    cluster.until_served([timer], {"a": PARTITIONS})
    return timer, clients


def _trigger(cluster: Cluster, job_id: str) -> None:
    command = {"command_id": str(uuid.uuid4()), "job_id": job_id, "kind": "trigger",
               "requested_at": cluster.now_ms()}  # fmt: skip
    cluster.producer.send(topic_name("timers.commands"), job_id, encode("TimerCommand", command))


def test_an_idle_turn_waits_on_the_inputs_for_no_longer_than_the_next_tick() -> None:
    cluster = Cluster()
    timer, clients = _served_timer(cluster)
    cluster.clock.advance(1.0)
    timer.step()  # the tick is due: it turns the wheels and sets the next one TICK_MS on
    clients.waits.clear()
    cluster.clock.advance(0.02)
    timer.step()
    waits = [(name, how, timeout) for name, how, timeout in clients.waits if timeout != 0]
    # One wait, on the inputs, for what is left of the tick (30 ms of fake time).
    assert waits == [("inputs", "poll", 0.03)], clients.waits
    assert all(how == "poll" for _name, how, timeout in clients.waits if timeout != 0)


def test_a_turn_serving_no_partition_waits_on_the_group_until_the_tick() -> None:
    """Nothing served, no inputs assigned: the group's consumer is the one with news (an
    assignment). The timer here has not joined the group, so it is given nothing."""
    cluster = Cluster()
    clients = RecordingClients(cluster.broker)
    settings = TimerSettings(instance="a", bootstrap="memory", group_id=GROUP,
                             tick_ms=TICK_MS, metrics_port=0)  # fmt: skip
    timer = TimerService(settings, clock=cluster.clock, clients=clients, inline=True)
    timer.step()  # the first turn: the tick is due at once, no wait
    clients.waits.clear()
    timer.step()
    assert timer.partitions == {}
    waits = [(name, how, timeout) for name, how, timeout in clients.waits if timeout != 0]
    assert waits == [("group", "poll", TICK_MS / 1000)], clients.waits


def test_a_command_is_committed_in_the_turn_that_reads_it_before_the_tick_is_due() -> None:
    cluster = Cluster()
    cluster.publish_job("job-1")
    timer, _clients = _served_timer(cluster)
    cluster.clock.advance(1.0)
    timer.step()  # a tick: the next is TICK_MS of fake time away, and the clock stays here
    before = [r for r in cluster.requests() if r["trigger"] == "manual"]
    _trigger(cluster, "job-1")
    timer.step()
    manual = [r for r in cluster.requests() if r["trigger"] == "manual"]
    assert before == []
    assert [r["job_id"] for r in manual] == ["job-1"]


def test_a_turn_reads_every_input_fetched_not_one_chunk() -> None:
    """A worker's events arrive two per execution: a turn that took only the first thousand
    left the partition believing finished executions were in flight (their tenant's cap held
    the next slots back), and the pipeline fired in waves (decision 0144)."""
    cluster = Cluster()
    cluster.publish_job("job-1")
    timer, _clients = _served_timer(cluster)
    cluster.clock.advance(1.0)
    timer.step()
    for _ in range(2_500):
        _trigger(cluster, "job-1")
    timer.step()  # one turn, the clock still
    runtime = timer.partitions[partition_for("job-1", PARTITIONS)]
    assert runtime.command_offset == 2_500  # every command read, and committed with its effect
    assert not runtime.inputs_moved


def test_worker_events_are_applied_and_bad_ones_dead_lettered_in_the_same_turn() -> None:
    """The intake reads a worker's events without making a `Record` of each (decision 0192):
    a record that is not an event, or whose key is not UTF-8, still takes the general path and
    is dead-lettered with its reason, a tombstone is passed over, and the events around them
    are applied. Every one of them moves the partition's events offset."""
    cluster = Cluster()
    cluster.publish_job("job-1")
    timer, _clients = _served_timer(cluster)
    cluster.clock.advance(1.0)
    timer.step()
    _trigger(cluster, "job-1")
    timer.step()
    [request] = [r for r in cluster.requests() if r["trigger"] == "manual"]
    partition = partition_for("job-1", PARTITIONS)
    runtime = timer.partitions[partition]
    events_topic = topic_name("executions.events")

    def event(kind: str) -> bytes:
        at = cluster.now_ms()
        made = execution_event(request, kind, event_id=f"{kind}:{request['execution_id']}:1:w",
                               event_time_ms=at, worker_id="worker-0",
                               lease_deadline_ms=at + 30_000 if kind == "leased" else None)  # fmt: skip
        return encode("ExecutionEvent", made)

    cluster.producer.send(events_topic, "job-1", b"\x00not an event")
    cluster.producer.send(events_topic, "job-1", event("leased"))
    cluster.producer.send(events_topic, "job-1", None)
    log = cluster.broker.log(events_topic, partition)
    log.append(b"\xffjob-1", event("succeeded"), None, cluster.now_ms(), None)
    timer.step()
    assert runtime.events_offset == 4
    assert runtime.timer.executions.running_count("job-1") == 1  # leased, heard
    letters = {letter["source_offset"]: letter for letter in cluster.dead_letters()}
    assert sorted(letters) == [0, 3]
    assert letters[0]["raw_value"] == b"\x00not an event"
    assert "UTF-8" in letters[3]["reason"]

    cluster.producer.send(events_topic, "job-1", event("succeeded"))
    timer.step()
    assert runtime.events_offset == 5
    assert runtime.timer.executions.running_count("job-1") == 0
