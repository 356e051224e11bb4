"""The attempts a lane has taken, and which request offsets wait on their leases.

At least once: a request's offset may be committed only once its `leased` (or, for a request
cancelled before it started, its `cancelled`) event is acknowledged by the broker. A
redelivery of an attempt this lane already took (a rebalance) is not run again; its offset
waits for the first delivery's lease too, or a lost lease could leave it committed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from tickwheel.services.worker.offsets import OffsetTracker

SEEN_ATTEMPTS = 10_000  # attempts started here, remembered to skip redeliveries

AttemptKey = tuple[str, int]  # (execution_id, attempt)


class LeaseLedger:
    """Thread-safe: `take` runs on the lane's thread, delivery reports on the producer's."""

    def __init__(self, offsets: OffsetTracker, on_fatal: Callable[[str], None]) -> None:
        self.offsets = offsets
        self.on_fatal = on_fatal
        self._lock = threading.Lock()
        # Attempts this lane has taken -> whether their `leased` event is acknowledged yet.
        self._seen: OrderedDict[AttemptKey, bool] = OrderedDict()
        # Redeliveries of an attempt whose lease is not yet durable: committed only after it is.
        self._duplicates: dict[AttemptKey, list[tuple[int, int]]] = {}

    def take(self, key: AttemptKey) -> bool:
        """True when this lane has not taken the attempt before (it is now taken)."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = False
            while len(self._seen) > SEEN_ATTEMPTS:
                self._seen.popitem(last=False)
            return True

    def take_all(self, keys: list[AttemptKey]) -> list[bool]:
        """`take` for each of `keys`, in order, under one lock."""
        with self._lock:
            seen = self._seen
            taken = []
            for key in keys:
                fresh = key not in seen
                if fresh:
                    seen[key] = False
                taken.append(fresh)
            while len(seen) > SEEN_ATTEMPTS:
                seen.popitem(last=False)
            return taken

    def duplicate(self, key: AttemptKey, partition: int, offset: int) -> None:
        """A redelivery of a taken attempt: done once that attempt's lease is durable."""
        with self._lock:
            if self._seen.get(key):
                self.offsets.done(partition, offset)
            else:
                self._duplicates.setdefault(key, []).append((partition, offset))

    def delivered(
        self, key: AttemptKey, partition: int, offset: int, what: str = "leased"
    ) -> Callable[[str | None], None]:
        """The delivery report for the event that makes the request at `offset` durable."""

        def callback(error: str | None) -> None:
            if error is None:
                self.offsets.done(partition, offset)
                with self._lock:
                    if key in self._seen:
                        self._seen[key] = True
                    for held_partition, held_offset in self._duplicates.pop(key, []):
                        self.offsets.done(held_partition, held_offset)
            else:
                # Never commit past it: after a restart the request is delivered again.
                self.on_fatal(f"{what} event of {key[0]} not delivered: {error}")

        return callback

    def delivered_all(
        self, keys: list[AttemptKey], positions: list[tuple[int, int]], what: str = "leased"
    ) -> Callable[[str | None], None]:
        """One delivery report for a batch: every event of `keys` (the requests at
        `positions`) acknowledged, or the first one that was not (`publish_batch`)."""

        def callback(error: str | None) -> None:
            if error is not None:
                self.on_fatal(f"{what} event of a batch of {len(keys)} not delivered: {error}")
                return
            self.offsets.done_all(positions)
            with self._lock:
                held: list[tuple[int, int]] = []
                for key in keys:
                    if key in self._seen:
                        self._seen[key] = True
                    if self._duplicates:
                        held.extend(self._duplicates.pop(key, ()))
            if held:
                self.offsets.done_all(held)

        return callback
