"""Restores on a thread of their own, so that a service keeps serving the partitions it has
while it reads a large one back (issue 16, B7). The timer, the orchestrator and the job writer
restore this way."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class RestoreResult(Generic[T]):
    """What the restore thread hands back: the rebuilt partition (`value`, whatever the
    service's restore returns), or why it could not be."""

    partition: int
    generation: int
    started: float
    value: T | None = None
    error: Exception | None = None


class BackgroundRestores(Generic[T]):
    """Restores on a thread of their own, one after another, so that the loop keeps serving the
    partitions it has while a large one is read (issue 16, B7). Each restore has a
    generation: a revoke (or a newer restore of the same partition) makes its result stale.
    The timer and the orchestrator both restore this way. `inline`: no thread, each restore
    runs in the loop's own thread when it asks what `finished` (the in-memory tier, whose
    broker is one thread's)."""

    def __init__(
        self, restore: Callable[[int], T], name: str = "timer-restore", inline: bool = False
    ) -> None:
        self._restore = restore
        self._name = name
        self._inline = inline
        self._requests: queue.Queue[tuple[int, int]] = queue.Queue()
        self._results: queue.Queue[RestoreResult[T]] = queue.Queue()
        self._current: dict[int, int] = {}
        self._generation = 0
        self._thread: threading.Thread | None = None
        self._stopped = False

    def begin(self, partition: int) -> None:
        self._generation += 1
        self._current[partition] = self._generation
        self._requests.put((partition, self._generation))
        if self._thread is None and not self._inline:
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.start()

    def cancel(self, partition: int) -> None:
        """The partition was revoked: a restore of it under way (or queued) is stale."""
        self._current.pop(partition, None)

    def under_way(self, partition: int) -> bool:
        return partition in self._current

    def finished(self) -> list[RestoreResult[T]]:
        """Restores done since the last call (stale ones left out), failures included."""
        while self._inline and not self._stopped and not self._requests.empty():
            self._run(*self._requests.get_nowait())
        done: list[RestoreResult[T]] = []
        while True:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                return done
            if self._current.get(result.partition) == result.generation:
                del self._current[result.partition]
                done.append(result)

    def stop(self) -> None:
        self._stopped = True
        self._requests.put((-1, -1))

    def _work(self) -> None:
        while True:
            partition, generation = self._requests.get()
            if partition < 0 or self._stopped:
                return
            self._run(partition, generation)

    def _run(self, partition: int, generation: int) -> None:
        if self._current.get(partition) != generation:
            return  # revoked (or superseded) before its turn came
        result: RestoreResult[T] = RestoreResult(partition, generation, time.monotonic())
        try:
            result.value = self._restore(partition)
        except Exception as exc:  # a broker hiccup, or worse: the loop decides
            result.error = exc
        self._results.put(result)
