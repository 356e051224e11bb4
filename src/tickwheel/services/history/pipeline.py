"""One batch's insert on a thread of its own while the sink reads the next (decision 0150).

chDB decodes, checks and writes a batch in C++ with the GIL released, and the sink's loop
spends most of its Python time reading and framing records: on a machine with two cores the
two overlap. Only the insert moves: the next batch is read, and every commit is made, on the
loop's own thread, and a batch's offsets are committed only after its insert returned, in
batch order (one insert in flight at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from tickwheel.services.history.batch import Batch


class InsertInFlight:
    """At most one batch being inserted; `finish` waits for it and hands it back to commit."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._batch: Batch | None = None
        self._future: Future[None] | None = None

    @property
    def batch(self) -> Batch | None:
        """The batch being inserted, if any."""
        return self._batch

    def start(self, batch: Batch, insert: Callable[[Batch], None]) -> None:
        """Insert `batch` on the insert thread; the previous one must be finished first."""
        if self._batch is not None:
            raise RuntimeError("an insert is already in flight: finish it first")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="history-insert")
        self._batch, self._future = batch, self._executor.submit(insert, batch)

    def finish(self) -> Batch | None:
        """Wait for the insert in flight and return its batch (None if there was none). An
        insert that failed raises here, on the loop's thread, and its batch is not returned:
        it must not be committed."""
        batch, future = self._batch, self._future
        self._batch = self._future = None
        if batch is None or future is None:
            return None
        future.result()
        return batch

    def close(self) -> None:
        """Stop the insert thread (after `finish`)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
