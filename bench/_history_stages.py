"""Where a drain's time goes, stage by stage (issue 17, item 4's profile): the sink's loop
with its insert inline, timed around each stage on the loop's own thread — reading (the
Kafka consume and the loop's Python per record, framing included), the encoded and row
inserts as the store runs them (chDB's decode, checks and part write), the rest of the write
(the frame's join, its dedup token, the fallback), and the commit."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tickwheel.services.history.batch import Batch
from tickwheel.services.history.sink import HistorySink

STAGES = ("read", "insert_encoded", "insert_rows", "write_rest", "commit")


class StageClock:
    """Wall seconds per stage."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)

    def per_record_us(self, records: int) -> dict[str, float]:
        return {stage: s * 1e6 / max(records, 1) for stage, s in self.seconds.items()}


class TimedStore:
    """The sink's store, timing its two inserts."""

    def __init__(self, store: Any, clock: StageClock) -> None:
        self._store, self._clock = store, clock

    def insert(self, table: str, rows: Sequence[Any], dedup_token: str | None = None) -> None:
        started = time.perf_counter()
        try:
            self._store.insert(table, rows, dedup_token=dedup_token)
        finally:
            self._clock.seconds["insert_rows"] += time.perf_counter() - started

    def insert_encoded(self, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            self._store.insert_encoded(*args, **kwargs)
        finally:
            self._clock.seconds["insert_encoded"] += time.perf_counter() - started

    def insert_encoded_union(self, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            self._store.insert_encoded_union(*args, **kwargs)
        finally:
            self._clock.seconds["insert_encoded"] += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class TimedSink(HistorySink):
    """A sink whose `step` is split into the stages above (insert inline only)."""

    clock: StageClock

    def step(self, idle_timeout_s: float = 0.5) -> int:
        before = dict(self.clock.seconds)
        started = time.perf_counter()
        size = super().step(idle_timeout_s)
        spent = time.perf_counter() - started
        written = sum(self.clock.seconds[s] - before[s] for s in STAGES if s != "read")
        self.clock.seconds["read"] += spent - written
        return size

    def _insert_batch(self, batch: Batch) -> None:
        before = self.clock.seconds["insert_encoded"] + self.clock.seconds["insert_rows"]
        started = time.perf_counter()
        super()._insert_batch(batch)
        inserts = self.clock.seconds["insert_encoded"] + self.clock.seconds["insert_rows"]
        self.clock.seconds["write_rest"] += time.perf_counter() - started - (inserts - before)

    def _commit(self, batch: Batch, unwritten: int = 0) -> None:
        started = time.perf_counter()
        super()._commit(batch, unwritten)
        self.clock.seconds["commit"] += time.perf_counter() - started
