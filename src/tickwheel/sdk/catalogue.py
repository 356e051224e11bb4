"""The job definitions held in memory by one long-lived reader, for processes that read many.

    from tickwheel.sdk.catalogue import CataloguedJobsClient
    jobs = CataloguedJobsClient()      # a JobsClient whose get/list read the catalogue
    jobs.get("nightly-reconcile")

`JobsClient.get` starts a consumer and reads the job's partition to its end on every call
(hundreds of milliseconds under load). `DefinitionCatalogue` keeps one consumer assigned to
every partition of `jobs.definitions`, followed by a thread of its own; before answering, a read
asks the broker where the partition ends *now* and waits until the follower is there: a read
still sees every write acknowledged before it began (the guarantee `JobsClient.get` gives), for
one watermark round trip. The catalogue holds every live definition in memory, as the timer
does for its partitions: as the bytes read, decoded when a read first asks for it (an API that
only writes reads back every definition it and the judge wrote, and never looks at most of
them: decision 0179).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from tickwheel.adapters.kafka.client import (
    OFFSET_BEGINNING,
    Consumer,
    FatalClientError,
    TopicPartition,
)
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import ReadTimedOut, decode_key, watermarks
from tickwheel.clock import Clock
from tickwheel.sdk.jobs import JobsClient, UnknownJob, _definition_of
from tickwheel.topology import topic_name

CATCH_UP_S = 10.0


class DefinitionCatalogue:
    """Every current definition of `jobs.definitions`. A follower thread consumes the topic
    without pause; a read asks the broker where the partition ends (on a consumer of its own,
    so reads run side by side) and waits until the follower has passed that offset."""

    def __init__(self, bootstrap: str | None = None, catch_up_s: float = CATCH_UP_S) -> None:
        self.topic = topic_name("jobs.definitions")
        self.catch_up_s = catch_up_s
        # A record answers a held fetch at once; the wait paces only idle asks (decision 0152).
        config = consumer_config(
            f"tickwheel-catalogue-{uuid.uuid4()}",
            bootstrap,
            **{"enable.partition.eof": False, "fetch.wait.max.ms": 100},
        )
        self._follower = Consumer(config)
        self._meta = Consumer(config)
        metadata = self._meta.list_topics(self.topic, timeout=10)
        self.partitions = sorted(metadata.topics[self.topic].partitions)
        self._follower.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in self.partitions]
        )
        self._next = dict.fromkeys(self.partitions, 0)
        # The bytes of each live definition until a read decodes it (then the record).
        self._records: dict[str, dict[str, Any] | bytes] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._thread = threading.Thread(target=self._follow, name="catalogue", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            while not self._stop.is_set():
                self._apply(self._follower.consume(5000, 0.1))
        except Exception as exc:  # reported to every read from now on
            with self._changed:
                self._failure = exc
                self._changed.notify_all()
            if isinstance(exc, FatalClientError):
                raise  # the process's to act on (decision 0200): a service exits, restarted

    def _apply(self, messages: list[Any]) -> None:
        with self._changed:
            for message in messages:
                if message.error():
                    continue
                self._next[message.partition()] = message.offset() + 1
                key, is_text = decode_key(message.key())
                if key is None or not is_text:
                    continue  # nobody's job (the timer dead-letters it)
                value = message.value()
                if value is None:
                    self._records.pop(key, None)
                else:
                    self._records[key] = value  # decoded when first read (`_record`)
            # Compacted gaps and transaction markers leave no record at the end offset: the
            # follower's position says it is past them.
            for tp in self._follower.position(
                [TopicPartition(self.topic, p) for p in self.partitions]
            ):
                if tp.offset >= 0:
                    self._next[tp.partition] = max(self._next[tp.partition], tp.offset)
            self._changed.notify_all()

    def _record(self, job_id: str) -> dict[str, Any] | None:
        """The definition held for `job_id`, decoded once (holding the condition); a record
        that is not a definition deletes the job, as it did when decoded on arrival."""
        held = self._records.get(job_id)
        if not isinstance(held, bytes):
            return held
        record = _definition_of(held)
        if record is None:
            del self._records[job_id]
        else:
            self._records[job_id] = record
        return record

    def _all(self) -> list[dict[str, Any]]:
        """Every definition held, decoded (holding the condition)."""
        records = [self._record(job_id) for job_id in list(self._records)]
        return [record for record in records if record is not None]

    def _ends(self, partitions: list[int]) -> dict[int, int]:
        # Asked outside the lock: reads wait on the broker side by side, not one after another.
        return {p: watermarks(self._meta, TopicPartition(self.topic, p))[1] for p in partitions}

    def _caught_up(self, ends: dict[int, int]) -> None:
        """Wait (holding the condition) until the follower has passed every end offset."""
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        deadline = time.monotonic() + self.catch_up_s
        while True:
            if self._failure is not None:
                raise self._failure
            if all(self._next[p] >= end for p, end in ends.items()):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReadTimedOut(f"reading {self.topic} to its end took over {self.catch_up_s}s")
            self._changed.wait(min(left, 0.1))

    def get(self, job_id: str, partition: int) -> dict[str, Any] | None:
        """The current definition of `job_id` (which lives in `partition`), or None."""
        ends = self._ends([partition])
        with self._changed:
            self._caught_up(ends)
            return self._record(job_id)

    def list(self) -> list[dict[str, Any]]:
        """Every current definition, by job id."""
        ends = self._ends(self.partitions)
        with self._changed:
            self._caught_up(ends)
            records = self._all()
        return sorted(records, key=lambda d: d["jobId"])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._follower.close()
        self._meta.close()


class CataloguedJobsClient(JobsClient):
    """A `JobsClient` whose reads (and a create's check that the id is free) go to one
    `DefinitionCatalogue` instead of a partition scan per call; writes are unchanged."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clock: Clock | None = None,
        catalogue: DefinitionCatalogue | None = None,
    ) -> None:
        super().__init__(bootstrap, clock)
        self.catalogue = catalogue or DefinitionCatalogue(bootstrap)

    def get(self, job_id: str) -> dict[str, Any]:
        from tickwheel.adapters.kafka.partitioner import partition_for

        partition = partition_for(job_id, len(self.catalogue.partitions))
        record = self.catalogue.get(job_id, partition)
        if record is None:
            raise UnknownJob(job_id)
        return record

    def list(self) -> list[dict[str, Any]]:
        return self.catalogue.list()
