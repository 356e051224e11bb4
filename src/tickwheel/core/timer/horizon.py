"""What is due within one partition's horizon: each job's next slot and each execution's
lease deadline or retry time in a timing wheel, the dispatch deadlines of queued requests in
their own queue, and the jobs whose next slot lies beyond the horizon, parked until it reaches
them. Pure: every instant is an argument.

Wheel entries are ints; `targets` maps each back to what it stands for:
("slot", job_id, slot_ms) or ("exec", execution_id, attempt, deadline_ms).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from typing import Any

from tickwheel.core.wheel import TimingWheel

Target = tuple[Any, ...]


class Horizon:
    def __init__(self, tick_ms: int, start_ms: int) -> None:
        self.tick_ms = tick_ms
        self.wheel = TimingWheel(tick_ms=tick_ms, start_ms=start_ms)
        self.targets: dict[int, Target] = {}
        self._next_entry = 0
        # Jobs whose next slot lies beyond the horizon: (next_ms, job_id), lazily invalidated
        # (a job edited meanwhile is recognised as stale when it comes up) ...
        self._parked: list[tuple[int, str]] = []
        # ... and compacted when stale ones outnumber the live ones (edits of far-off jobs):
        # per job, the pair parked last is its live one.
        self._parked_last: dict[str, int] = {}
        # Dispatch deadlines of queued requests, oldest first: every request gets the same
        # timeout, so they come due in the order they were set (a deque, not a wheel entry each:
        # a burst of a million requests costs a million appends).
        self._dispatch: deque[tuple[int, str, int]] = deque()

    def __len__(self) -> int:
        """What the wheel holds (the wheel-size metric; dispatch deadlines are not in it)."""
        return len(self.wheel)

    def add_slot(self, job_id: str, slot_ms: int, fire_ms: int) -> tuple[int, int]:
        """(entry, wheel handle) of the job's next slot, due at `fire_ms` (slot + jitter)."""
        entry = self._entry(("slot", job_id, slot_ms))
        return entry, self.wheel.insert(fire_ms, entry)

    def add_deadline(self, execution_id: str, attempt: int, deadline_ms: int) -> None:
        """An execution's lease deadline, dispatch deadline or retry time. Superseded ones are
        not cancelled: they are recognised as stale when they come due."""
        self.wheel.insert(deadline_ms, self._entry(("exec", execution_id, attempt, deadline_ms)))

    def add_dispatch_deadline(self, execution_id: str, attempt: int, deadline_ms: int) -> None:
        """A queued request's dispatch deadline. Superseded ones (the request was leased, or
        reissued) are not taken out: they are recognised as stale when they come due."""
        entry = (deadline_ms, execution_id, attempt)
        if self._dispatch and self._dispatch[-1][0] > deadline_ms:
            bisect.insort(self._dispatch, entry)  # a restored one: rare
        else:
            self._dispatch.append(entry)

    def next_dispatch_due(self, now_ms: int) -> tuple[int, str, int] | None:
        """The earliest dispatch deadline, (deadline_ms, execution_id, attempt), if it is due
        by `now_ms`; it stays first until `pass_dispatch_due` takes it."""
        if self._dispatch and self._dispatch[0][0] <= now_ms:
            return self._dispatch[0]
        return None

    def pass_dispatch_due(self) -> None:
        """Take out the earliest dispatch deadline (the one `next_dispatch_due` gave)."""
        self._dispatch.popleft()

    def cancel(self, entry: int, handle: int) -> None:
        self.wheel.cancel(handle)
        self.targets.pop(entry, None)

    def later(self, entry: int, target: Target, at_ms: int) -> None:
        """Look at a due entry again at `at_ms` (a lease held while worker events lag)."""
        self.targets[entry] = target
        self.wheel.insert(at_ms, entry)

    def due(self, now_ms: int) -> list[tuple[int, Target]]:
        """Every entry due by `now_ms`, in time order, with what it stands for."""
        out = []
        for _fire_ms, entry in self.wheel.advance(now_ms):
            target = self.targets.pop(entry, None)
            if target is not None:  # None: its job was unscheduled after the wheel gave it up
                out.append((entry, target))
        return out

    def park(self, job_id: str, next_ms: int) -> None:
        heapq.heappush(self._parked, (next_ms, job_id))
        self._parked_last[job_id] = next_ms
        if len(self._parked) > 2 * len(self._parked_last) + 1024:
            self._parked = [(at, job) for job, at in self._parked_last.items()]
            heapq.heapify(self._parked)

    def unpark(self, job_id: str) -> None:
        """The job's parked slot no longer stands (it was edited, paused or deleted)."""
        self._parked_last.pop(job_id, None)

    def reached(self, limit_ms: int) -> list[tuple[int, str]]:
        """Parked (next_ms, job_id) pairs the horizon now reaches; the caller checks that each
        is still its job's next slot."""
        out = []
        while self._parked and self._parked[0][0] <= limit_ms:
            pair = heapq.heappop(self._parked)
            if self._parked_last.get(pair[1]) == pair[0]:
                del self._parked_last[pair[1]]
            out.append(pair)
        return out

    def _entry(self, target: Target) -> int:
        entry = self._next_entry
        self._next_entry += 1
        self.targets[entry] = target
        return entry
