"""The timing wheel never fires early, never loses or duplicates an entry, and is compact."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.unit.core._settings import PROPS
from tickwheel.core.wheel import TimingWheel

START = 1_800_000_000_000


class WheelAgainstModel(RuleBasedStateMachine):
    """Random insert/cancel/advance against a dict model; a tiny wheel forces wrap-arounds,
    entries several turns ahead, past-due inserts and node reuse."""

    @initialize(tick=st.sampled_from([1, 7, 10, 1000]), slots=st.sampled_from([1, 4, 16, 256]))
    def setup(self, tick: int, slots: int) -> None:
        self.wheel = TimingWheel(tick, START, slots=slots)
        self.span = tick * slots
        self.now = START
        self.pending: dict[int, tuple[int, int]] = {}  # handle -> (fire_at, entry)
        self.done: list[int] = []  # handles that fired or were cancelled
        self.next_entry = 0
        self.fired_entries: set[int] = set()

    @rule(delta=st.integers(-5_000, 20_000))
    def insert(self, delta: int) -> None:
        fire_at = self.now + delta
        entry = self.next_entry
        self.next_entry += 1
        handle = self.wheel.insert(fire_at, entry)
        assert handle not in self.pending
        self.pending[handle] = (fire_at, entry)

    @precondition(lambda self: bool(self.pending))
    @rule(data=st.data())
    def cancel_pending(self, data: st.DataObject) -> None:
        handle = data.draw(st.sampled_from(sorted(self.pending)))
        assert self.wheel.cancel(handle)
        del self.pending[handle]
        self.done.append(handle)

    @precondition(lambda self: bool(self.done))
    @rule(data=st.data())
    def cancel_stale(self, data: st.DataObject) -> None:
        # A handle that fired or was cancelled stays dead even after its node is reused.
        handle = data.draw(st.sampled_from(self.done))
        assert not self.wheel.cancel(handle)

    @rule(step=st.one_of(st.integers(0, 50), st.integers(0, 30_000)))
    def advance(self, step: int) -> None:
        self.now += step
        got = self.wheel.advance(self.now)
        expected = sorted(v for v in self.pending.values() if v[0] <= self.now)
        assert got == expected  # exactly the due ones, in (fire time, entry) order
        assert all(fire_at <= self.now for fire_at, _ in got)  # never early
        for handle in [h for h, v in self.pending.items() if v[0] <= self.now]:
            del self.pending[handle]
            self.done.append(handle)
        entries = {entry for _, entry in got}
        assert not entries & self.fired_entries  # never twice
        self.fired_entries |= entries

    @invariant()
    def size_matches(self) -> None:
        if hasattr(self, "wheel"):
            assert len(self.wheel) == len(self.pending)


TestWheelAgainstModel = WheelAgainstModel.TestCase
TestWheelAgainstModel.settings = settings(PROPS, stateful_step_count=60)


def test_everything_fires_eventually_even_far_beyond_the_span() -> None:
    wheel = TimingWheel(10, START, slots=8)  # an 80 ms span
    fires = [START + d for d in (0, 5, 79, 80, 81, 800, 10_000, 86_400_000)]
    for i, f in enumerate(fires):
        wheel.insert(f, i)
    got = []
    for to in (START + 3, START + 100, START + 5_000, START + 90_000_000):
        got += wheel.advance(to)
    assert got == [(f, i) for i, f in enumerate(fires)]
    assert len(wheel) == 0


def test_past_due_insert_fires_at_the_next_advance() -> None:
    wheel = TimingWheel(10, START)
    wheel.advance(START + 1_000)
    wheel.insert(START + 5, 1)
    assert wheel.advance(START + 1_000) == [(START + 5, 1)]


def test_time_never_goes_backwards() -> None:
    wheel = TimingWheel(10, START)
    wheel.advance(START + 10)
    with pytest.raises(ValueError):
        wheel.advance(START + 9)


def test_freed_nodes_are_reused_so_storage_tracks_the_peak() -> None:
    wheel = TimingWheel(10, START)
    for round_ in range(5):
        for i in range(1_000):
            wheel.insert(START + round_ * 10_000 + i, i)
        assert len(wheel.advance(START + round_ * 10_000 + 5_000)) == 1_000
    assert wheel.capacity() == 1_000


def test_an_entry_costs_well_under_64_bytes() -> None:
    n = 100_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        wheel = TimingWheel(10, START, slots=1024)
        for i in range(n):
            wheel.insert(START + (i * 7919) % 3_600_000, i)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(wheel) == n
    assert used / n < 32
