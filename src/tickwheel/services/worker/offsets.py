"""Which request offsets may be committed: at-least-once needs the commit point of a partition
to stay below every request whose `leased` (or `cancelled`) event is not yet acknowledged,
even when requests start out of order (tenant caps) or finish out of order."""

from __future__ import annotations

import threading
from collections.abc import Iterable


class OffsetTracker:
    """Per partition: the offsets handed out and not yet done. Thread-safe (delivery reports
    arrive on the producer's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, set[int]] = {}
        self._next: dict[int, int] = {}  # one past the highest offset seen
        self._committed: dict[int, int] = {}

    def assign(self, partition: int) -> None:
        with self._lock:
            self._pending.setdefault(partition, set())

    def revoke(self, partition: int) -> None:
        with self._lock:
            self._pending.pop(partition, None)
            self._next.pop(partition, None)
            self._committed.pop(partition, None)

    def track(self, partition: int, offset: int) -> None:
        with self._lock:
            pending = self._pending.setdefault(partition, set())
            pending.add(offset)
            self._next[partition] = max(self._next.get(partition, 0), offset + 1)

    def track_all(self, positions: Iterable[tuple[int, int]]) -> None:
        """`track` for a poll's worth of (partition, offset), under one lock."""
        with self._lock:
            pending_of, next_of = self._pending, self._next
            for partition, offset in positions:
                pending = pending_of.get(partition)
                if pending is None:
                    pending = pending_of[partition] = set()
                pending.add(offset)
                if offset >= next_of.get(partition, 0):
                    next_of[partition] = offset + 1

    def done_all(self, positions: Iterable[tuple[int, int]]) -> None:
        """`done` for many (partition, offset), under one lock."""
        with self._lock:
            pending_of = self._pending
            for partition, offset in positions:
                pending = pending_of.get(partition)
                if pending is not None:
                    pending.discard(offset)

    def done(self, partition: int, offset: int) -> None:
        """The request at `offset` is safely recorded; a partition revoked since is ignored."""
        with self._lock:
            pending = self._pending.get(partition)
            if pending is not None:
                pending.discard(offset)

    def pending(self, partition: int) -> int:
        with self._lock:
            return len(self._pending.get(partition, ()))

    def committable(self, everything: bool = False) -> dict[int, int]:
        """Partition -> offset to commit, for each partition whose commit point advanced (or
        for every partition with a commit point when `everything`: an asynchronous commit
        that failed unseen is then made good at a revoke or a shutdown)."""
        with self._lock:
            result: dict[int, int] = {}
            for partition, pending in self._pending.items():
                if partition not in self._next:
                    continue
                point = min(pending) if pending else self._next[partition]
                if everything or point > self._committed.get(partition, -1):
                    result[partition] = point
            return result

    def committed(self, partition: int, offset: int) -> None:
        with self._lock:
            if partition in self._pending:
                self._committed[partition] = max(self._committed.get(partition, -1), offset)
