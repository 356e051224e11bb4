"""A lane's requests sorted for starting, outside the lane's lock: those cancelled before they
started and redeliveries of attempts already taken here are skipped (each with the record
that lets its offset be committed), the rest run. `all_start_inline` says whether a poll can
start as one inline batch at once and `sort_inline` sorts it (decision 0163); `Skips` writes
what a skipped request needs."""

from __future__ import annotations

import logging
from collections.abc import Callable

from tickwheel.clock import Clock
from tickwheel.sdk.worker import JobType
from tickwheel.services.worker.attempt import EventSink
from tickwheel.services.worker.codec import AttemptEvents, new_unique
from tickwheel.services.worker.control import CancelRegistry
from tickwheel.services.worker.inline import InlineAttempt, JobKinds
from tickwheel.services.worker.intake import Pending
from tickwheel.services.worker.ledger import AttemptKey, LeaseLedger
from tickwheel.services.worker.tenants import TenantQueue

log = logging.getLogger("tickwheel.worker")

Skipped = tuple[str, Pending, AttemptKey]  # ("cancelled" | "duplicate", the request, its key)


def all_start_inline(accepted: list[Pending], kinds: JobKinds, queue: TenantQueue[Pending]) -> bool:
    """Whether every one of `accepted` is an inline type whose tenant is below its cap: with
    nothing waiting and a slot free (the caller's to check, under the lane's lock), the
    lane's dispatch would then start them all in one inline batch (decision 0163)."""
    kind_of = kinds.of
    if not all(kind_of(name)[1] for name in {item.request["job_type"] for item in accepted}):
        return False
    if queue.any_running():  # slot attempts hold tenant shares: each tenant below its cap?
        running, cap = queue.running, queue.cap
        return all(running(tenant) < cap for tenant in {i.request["tenant_id"] for i in accepted})
    return True


def sort_inline(
    ready: list[Pending], cancels: CancelRegistry, ledger: LeaseLedger, kinds: JobKinds
) -> tuple[list[Skipped], list[InlineAttempt], list[AttemptKey], list[tuple[int, int]]]:
    """Sort `ready` (every one of an inline type) as the lane's dispatch does one request at
    a time: cancelled before the start, already taken here (`ledger.take`), or to run. The
    cancellations are looked up and the attempts taken under one lock each for the poll."""
    keys = [(item.request["execution_id"], item.request["attempt"]) for item in ready]
    cancelled = cancels.cancelled_among(keys)
    skipped: list[Skipped] = []
    runnable = list(zip(ready, keys, strict=True))
    if cancelled:
        skipped = [("cancelled", item, key) for item, key in runnable if key in cancelled]
        runnable = [(item, key) for item, key in runnable if key not in cancelled]
    taken = ledger.take_all([key for _item, key in runnable])
    inline: list[InlineAttempt] = []
    inline_keys: list[AttemptKey] = []
    positions: list[tuple[int, int]] = []
    kind_of = kinds.of
    job_types: dict[str, JobType | None] = {}  # a poll has a few types: looked up once each
    for (item, key), fresh in zip(runnable, taken, strict=True):
        if not fresh:
            skipped.append(("duplicate", item, key))
            continue
        request = item.request
        name = request["job_type"]
        job_type = job_types.get(name)
        if job_type is None:
            job_type = job_types[name] = kind_of(name)[0]
        assert job_type is not None  # the caller found every one inline
        inline.append(InlineAttempt(request, job_type))
        inline_keys.append(key)
        positions.append((item.partition, item.offset))
    return skipped, inline, inline_keys, positions


class Skips:
    """The records of skipped requests, and the delivery reports that release their offsets."""

    def __init__(
        self,
        *,
        ledger: LeaseLedger,
        cancels: CancelRegistry,
        sink: EventSink,
        clock: Clock,
        worker_id: str,
    ) -> None:
        self.ledger = ledger
        self.cancels = cancels
        self.sink = sink
        self.clock = clock
        self.worker_id = worker_id

    def delivered(self, item: Pending, what: str = "leased") -> Callable[[str | None], None]:
        """The report of the event that makes `item`'s request durable."""
        key = (item.request["execution_id"], item.request["attempt"])
        return self.ledger.delivered(key, item.partition, item.offset, what)

    def duplicate(self, item: Pending, key: AttemptKey) -> None:
        """Redelivered (a rebalance) while this worker runs or ran the same attempt: its lease
        and outcome are recorded by that run."""
        self.ledger.duplicate(key, item.partition, item.offset)
        log.info(
            "attempt already taken here",
            extra={
                "action": "duplicate_request_skipped",
                "execution_id": key[0],
                "attempt": key[1],
            },
        )

    def cancelled(self, item: Pending) -> None:
        """Cancelled before it started: a `cancelled` event, whose report releases its offset."""
        request = item.request
        reason = self.cancels.reason(request["execution_id"]) or "cancel requested"
        events = AttemptEvents(request, self.worker_id)
        value = events.encode(
            "cancelled",
            event_time_ms=int(self.clock.now() * 1000),
            unique=new_unique(),
            reason=reason,
            details={"started": False},
        )
        self.sink.publish_record(events.job_key, value, self.delivered(item, "cancelled"))
        log.info(
            "cancelled before it started",
            extra={
                "action": "execution_skipped_cancelled",
                "execution_id": request["execution_id"],
                "job_id": request["job_id"],
                "attempt": request["attempt"],
                "reason": reason,
            },
        )
