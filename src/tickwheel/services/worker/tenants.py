"""Requests waiting for a slot, per tenant, served round-robin under a per-tenant cap.

A tenant at its cap waits while other tenants' requests go ahead: the largest tenant does not
set everyone's latency on this worker.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TenantQueue(Generic[T]):
    """Not thread-safe: the lane holds its lock around every call."""

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("a tenant cap is at least 1")
        self.cap = cap
        self._queues: dict[str, deque[T]] = {}
        # Tenants with waiting requests, in rotation order. A deque beside a plain dict, not
        # an OrderedDict: iterating an OrderedDict whose keys come and go cost ~15 µs a pop.
        self._rotation: deque[str] = deque()
        self._running: dict[str, int] = {}  # a plain dict: Counter's misses run Python
        self._size = 0

    def push(self, tenant: str, item: T) -> None:
        queue = self._queues.get(tenant)
        if queue is None:
            queue = self._queues[tenant] = deque()
            self._rotation.append(tenant)
        queue.append(item)
        self._size += 1

    def pop(self) -> tuple[str, T] | None:
        """The next request of the first tenant (in rotation) below its cap; the tenant then
        moves to the back of the rotation and counts one more running."""
        rotation, running, cap = self._rotation, self._running, self.cap
        for position, tenant in enumerate(rotation):
            count = running.get(tenant, 0)
            if count < cap:
                queue = self._queues[tenant]
                item = queue.popleft()
                self._size -= 1
                if position == 0:  # the usual case: the first in rotation has room
                    rotation.popleft()
                else:
                    del rotation[position]
                if queue:
                    rotation.append(tenant)
                else:
                    del self._queues[tenant]
                running[tenant] = count + 1
                return tenant, item
        return None

    def release(self, tenant: str) -> None:
        """One of `tenant`'s requests stopped running."""
        count = self._running.get(tenant, 0) - 1
        if count <= 0:
            self._running.pop(tenant, None)
        else:
            self._running[tenant] = count

    def running(self, tenant: str) -> int:
        return self._running.get(tenant, 0)

    def any_running(self) -> bool:
        return bool(self._running)

    def drop(self, predicate: Callable[[T], bool]) -> list[T]:
        """Remove (and return) the waiting requests matching `predicate`."""
        dropped: list[T] = []
        for tenant in list(self._rotation):
            queue = self._queues[tenant]
            kept = deque(item for item in queue if not predicate(item))
            dropped.extend(item for item in queue if predicate(item))
            if kept:
                self._queues[tenant] = kept
            else:
                del self._queues[tenant]
                self._rotation.remove(tenant)
        self._size -= len(dropped)
        return dropped

    def __len__(self) -> int:
        return self._size
