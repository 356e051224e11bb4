"""One thread heartbeats every running attempt of the worker, each on its own schedule, and
stops heartbeating an attempt once it runs past its maximum run time (handing it to the
lease's `on_overrun`): a hung handler must not keep its lease alive for ever."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading

from tickwheel.clock import Clock
from tickwheel.services.worker.attempt import AttemptLease

log = logging.getLogger("tickwheel.worker")


class HeartbeatScheduler:
    """Leases by their next heartbeat. `run_due(now)` beats the ones that are due (units call
    it with a fake clock); `run()` is the thread's loop."""

    def __init__(self, clock: Clock, max_wait: float = 1.0) -> None:
        self.clock = clock
        self.max_wait = max_wait
        self._heap: list[tuple[float, int, AttemptLease]] = []
        self._active: set[int] = set()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, lease: AttemptLease) -> None:
        with self._lock:
            self._active.add(id(lease))
            heapq.heappush(self._heap, (lease.next_wake, next(self._seq), lease))
        self._wake.set()

    def remove(self, lease: AttemptLease) -> None:
        with self._lock:
            self._active.discard(id(lease))

    def __len__(self) -> int:
        with self._lock:
            return len(self._active)

    def next_due(self) -> float | None:
        with self._lock:
            while self._heap and id(self._heap[0][2]) not in self._active:
                heapq.heappop(self._heap)
            return self._heap[0][0] if self._heap else None

    def run_due(self, now: float) -> int:
        """Heartbeat every active lease due at `now`, and hand those past their run deadline
        to their `on_overrun` (no heartbeat for them again); returns how many beat."""
        due: list[AttemptLease] = []
        overrun: list[AttemptLease] = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now:
                _, _, lease = heapq.heappop(self._heap)
                if id(lease) not in self._active:
                    continue
                if lease.overran(now):
                    self._active.discard(id(lease))
                    overrun.append(lease)
                else:
                    due.append(lease)
        for lease in overrun:
            try:
                if lease.on_overrun is not None:
                    lease.on_overrun(lease)
            except Exception:  # one failed expiry must not stop the other leases' schedule
                log.exception("overrun handling failed", extra={"action": "overrun_failed"})
        beats = 0
        for lease in due:
            try:
                # A manual ctx.heartbeat() may have moved the schedule on since it was queued.
                if lease.next_due <= now and lease.heartbeat():
                    beats += 1
            except Exception:  # one failed publish must not drop the other leases' schedule
                log.exception("heartbeat failed", extra={"action": "heartbeat_failed"})
            finally:
                with self._lock:
                    if id(lease) in self._active:
                        heapq.heappush(self._heap, (lease.next_wake, next(self._seq), lease))
        return beats

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="heartbeats", daemon=True)
        self._thread.start()

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_due(self.clock.now())
            except Exception:  # a failed publish must not end heartbeating for everyone
                log.exception("heartbeat failed", extra={"action": "heartbeat_failed"})
            due = self.next_due()
            wait = self.max_wait if due is None else min(self.max_wait, due - self.clock.now())
            self._wake.wait(max(0.0, wait))
            self._wake.clear()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
