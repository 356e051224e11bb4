"""How long the history sink keeps a batch open (decision 0171), on the in-memory broker with
the time a read waits for its records spent on a fake clock: a flow that fills each read's
chunk keeps the batch open up to `busy_wait_s`, and a light flow's batch still ends at
`max_wait_s` after its first record, so a quiet system's events are as soon visible."""

from __future__ import annotations

from typing import Any

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.memory import MemoryConsumer
from tickwheel.clock import FakeClock
from tickwheel.services.history.settings import DEFAULT_MAX_BATCH
from tickwheel.services.history.sink import READ_CHUNK, HistorySink

from .test_history_sink_memory import GROUP, World


class Flow:
    """A consumer whose records arrive at `per_s` a second: a read of n records waits on
    the fake clock until they are there, or until its timeout with what came meanwhile."""

    def __init__(self, inner: MemoryConsumer, clock: FakeClock, per_s: float) -> None:
        self.inner, self.clock, self.per_s = inner, clock, per_s
        self.reads: list[int] = []

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        needed_s = num_messages / self.per_s
        if needed_s <= timeout:
            self.clock.advance(needed_s)
            arrived = num_messages
        else:
            self.clock.advance(timeout)
            arrived = int(self.per_s * timeout)
        messages = self.inner.consume(arrived, 0) if arrived else []
        self.reads.append(len(messages))
        return messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _first_batch(
    per_s: float, executions: int = 4_000, max_batch: int = 20_000
) -> tuple[int, float]:
    """The first batch's records and how long (fake seconds) it stayed open."""
    world = World(executions=executions)
    clock = FakeClock(0.0)
    flow = Flow(MemoryConsumer(world.broker, consumer_config(GROUP, "memory")), clock, per_s)
    sink = HistorySink(
        world.store, flow, world.dead_letters,  # type: ignore[arg-type]
        max_batch=max_batch, max_wait_s=0.2, busy_wait_s=1.0, monotonic=clock.now,
    )  # fmt: skip
    sink.subscribe()
    # The memory consumer's first poll joins the group; its records come with the next.
    records = 0
    for _ in range(5):  # bounded: the join, then the first batch
        records = sink.step(idle_timeout_s=0)
        if records:
            break
    return records, clock.now()


def test_a_busy_flow_keeps_the_batch_open_up_to_the_busy_wait() -> None:
    # 10,000 records a second fill each read's chunk (1,000 in 0.1 s): the batch stays open
    # past the 200 ms wait, up to a second, and holds what a second brought.
    records, open_s = _first_batch(per_s=10_000)
    assert open_s > 0.2
    assert open_s <= 1.0 + 1e-9
    assert records > 0.2 * 10_000 + READ_CHUNK  # more than a 200 ms batch could hold


def test_a_light_flow_ends_the_batch_at_the_wait() -> None:
    # 2,000 a second never fill a chunk within the wait: the batch ends 200 ms after its
    # first record, as before.
    records, open_s = _first_batch(per_s=2_000)
    assert abs(open_s - 0.2) < 1e-9
    assert records <= 1 + 0.2 * 2_000


def test_the_default_cap_holds_a_second_of_a_10000_per_second_pipeline() -> None:
    # 10,000 executions a second are 30,000 records (a request, `leased`, `succeeded`): with
    # the service's default cap the busy batch is a second of them, not cut short by the cap
    # (decision 0183: a cut batch is one more part per table for chDB to write and merge).
    records, open_s = _first_batch(per_s=30_000, executions=12_000, max_batch=DEFAULT_MAX_BATCH)
    assert abs(open_s - 1.0) < 1e-6
    assert records >= 30_000 - READ_CHUNK
