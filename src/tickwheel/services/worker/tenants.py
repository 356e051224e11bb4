"""Requests waiting for a slot, per tenant, served round-robin under a per-tenant cap.

A tenant at its cap waits while other tenants' requests go ahead: the largest tenant does not
set everyone's latency on this worker.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TenantQueue(Generic[T]):
    """Not thread-safe: the lane holds its lock around every call."""

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("a tenant cap is at least 1")
        self.cap = cap
        self._queues: OrderedDict[str, deque[T]] = OrderedDict()
        self._running: Counter[str] = Counter()
        self._size = 0

    def push(self, tenant: str, item: T) -> None:
        self._queues.setdefault(tenant, deque()).append(item)
        self._size += 1

    def pop(self) -> tuple[str, T] | None:
        """The next request of the first tenant (in rotation) below its cap; the tenant then
        moves to the back of the rotation and counts one more running."""
        for tenant, queue in self._queues.items():
            if self._running[tenant] < self.cap:
                item = queue.popleft()
                self._size -= 1
                if queue:
                    self._queues.move_to_end(tenant)
                else:
                    del self._queues[tenant]
                self._running[tenant] += 1
                return tenant, item
        return None

    def release(self, tenant: str) -> None:
        """One of `tenant`'s requests stopped running."""
        self._running[tenant] -= 1
        if self._running[tenant] <= 0:
            del self._running[tenant]

    def running(self, tenant: str) -> int:
        return self._running[tenant]

    def drop(self, predicate: Callable[[T], bool]) -> list[T]:
        """Remove (and return) the waiting requests matching `predicate`."""
        dropped: list[T] = []
        for tenant in list(self._queues):
            queue = self._queues[tenant]
            kept = deque(item for item in queue if not predicate(item))
            dropped.extend(item for item in queue if predicate(item))
            if kept:
                self._queues[tenant] = kept
            else:
                del self._queues[tenant]
        self._size -= len(dropped)
        return dropped

    def __len__(self) -> int:
        return self._size
