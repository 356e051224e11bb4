"""How the API publishes a definition: each request waits for its own record's
acknowledgement, not for a flush of everything in flight (decision 0100).

`JobsClient` publishes with `send` then `flush`, right for a CLI that writes one record. In
the API dozens of requests share one producer: each flush waited until nothing was in flight,
so every request also waited for the records of the requests beside it, and none could share
a batch for long. `EventProducer.deliver` waits for one record's delivery report; a 201 still
means the definition is acknowledged by the broker (`acks=all`, idempotent producer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import watermarks
from tickwheel.clock import Clock
from tickwheel.sdk.catalogue import CataloguedJobsClient, DefinitionCatalogue

# Locks striped by job id: bounded memory, and writes to different jobs rarely share one.
WRITE_STRIPES = 256


class AckedJobsClient(CataloguedJobsClient):
    """`CataloguedJobsClient` whose writes wait for their own acknowledgement, and whose
    writes to one job are serialised in this process (decision 0101): a create's check that
    the id is free, an update's `expectedVersion` check and a delete's existence check are
    made and published under the job's lock, so two requests through this API instance can
    never both pass the check. Across API instances and direct producers it is still
    last-writer-wins until the single writer per partition (decision 0099) judges them."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clock: Clock | None = None,
        catalogue: DefinitionCatalogue | None = None,
    ) -> None:
        super().__init__(bootstrap, clock, catalogue or SharedEndsCatalogue(bootstrap))
        self._producer_lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(WRITE_STRIPES)]

    def _job_lock(self, job_id: str) -> threading.Lock:
        return self._stripes[hash(job_id) % WRITE_STRIPES]

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        job_id = spec.get("jobId")
        if not isinstance(job_id, str):
            return super().create(spec)  # a generated id is nobody else's
        with self._job_lock(job_id):
            return super().create(spec)

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        with self._job_lock(job_id):
            return super().update(job_id, changes, expected_version)

    def delete(self, job_id: str) -> None:
        with self._job_lock(job_id):
            super().delete(job_id)

    def _writer(self) -> EventProducer:
        with self._producer_lock:
            if self._producer is None:
                self._producer = EventProducer(self.bootstrap)
            return self._producer

    def _publish(self, topic: str, key: str, value: bytes | None) -> None:
        self._writer().deliver(topic, key, value)


class SharedEnds:
    """Where each partition ends, asked of the broker by one caller for every caller waiting:
    group commit for watermark requests (decision 0100).

    A read must see every write acknowledged before it began, so it needs an end offset asked
    *after* it arrived. A request already in flight when it arrives does not qualify; the next
    one does, and one caller asks it for everyone who arrived meanwhile. Under load that is
    one broker round trip per partition at a time instead of one per request, and no read
    waits for more than the one in flight plus its own."""

    def __init__(self, ask: Callable[[int], int]) -> None:
        self.ask = ask
        self._cond = threading.Condition()
        self._started: dict[int, int] = {}  # per partition: requests begun so far
        self._done: dict[int, int] = {}  # the latest request answered (its number)
        self._answer: dict[int, int | BaseException] = {}
        self._running: set[int] = set()

    def end(self, partition: int) -> int:
        with self._cond:
            wanted = self._started.get(partition, 0) + 1  # begun after this call arrived
            while True:
                if self._done.get(partition, 0) >= wanted:
                    known = self._answer[partition]
                    if isinstance(known, BaseException):
                        raise known
                    return known
                if partition not in self._running:
                    self._running.add(partition)
                    number = self._started[partition] = self._started.get(partition, 0) + 1
                    break
                self._cond.wait()
        answer: int | BaseException
        try:
            answer = self.ask(partition)
        except BaseException as exc:  # every caller of this round gets it
            answer = exc
        with self._cond:
            self._running.discard(partition)
            self._done[partition], self._answer[partition] = number, answer
            self._cond.notify_all()
        if isinstance(answer, BaseException):
            raise answer
        return answer


class SharedEndsCatalogue(DefinitionCatalogue):
    """The SDK's catalogue, asking partition ends through `SharedEnds`."""

    def __init__(self, bootstrap: str | None = None) -> None:
        super().__init__(bootstrap)
        self._shared = SharedEnds(
            lambda p: watermarks(self._meta, TopicPartition(self.topic, p))[1]
        )

    def _ends(self, partitions: list[int]) -> dict[int, int]:
        return {p: self._shared.end(p) for p in partitions}
