"""The job definitions held in memory by one long-lived reader, for processes that read many.

    from tickwheel.sdk.catalogue import CataloguedJobsClient
    jobs = CataloguedJobsClient()      # a JobsClient whose get/list read the catalogue
    jobs.get("nightly-reconcile")

`JobsClient.get` starts a consumer and reads the job's partition to its end on every call
(hundreds of milliseconds under load). `DefinitionCatalogue` follows every partition of
`jobs.definitions` (`adapters.kafka.follower.TopicFollower`); before answering, a read
asks the broker where the partition ends *now* and waits until the follower is there: a read
still sees every write acknowledged before it began (the guarantee `JobsClient.get` gives), for
one watermark round trip. The catalogue holds every live definition in memory, as the timer
does for its partitions: as the bytes read, decoded when a read first asks for it (an API that
only writes reads back every definition it and the judge wrote, and never looks at most of
them: decision 0179).
"""

from __future__ import annotations

from typing import Any

from tickwheel.adapters.kafka.follower import CATCH_UP_S, SharedEnds, TopicFollower
from tickwheel.clock import Clock
from tickwheel.sdk.jobs import JobsClient, UnknownJob, _definition_of
from tickwheel.topology import topic_name


class DefinitionCatalogue:
    """Every current definition of `jobs.definitions`, held by a `TopicFollower`; a read asks
    the broker where the partition ends and waits until the follower has passed it. With
    `shared_ends`, readers waiting at once share one such question per partition
    (`SharedEnds`: a server's many requests)."""

    def __init__(
        self,
        bootstrap: str | None = None,
        catch_up_s: float = CATCH_UP_S,
        shared_ends: bool = False,
    ) -> None:
        self.topic = topic_name("jobs.definitions")
        # The bytes of each live definition until a read decodes it (then the record).
        self._records: dict[str, dict[str, Any] | bytes] = {}
        self.follower = TopicFollower(
            {self.topic: self._held}, bootstrap, name="catalogue", catch_up_s=catch_up_s
        )
        self.partitions = self.follower.partitions[self.topic]

        def ask(partition: int) -> int:
            return self.follower.end((self.topic, partition))

        self.end_of = SharedEnds(ask).end if shared_ends else ask

    def _held(self, key: str | None, _partition: int, value: bytes | None) -> None:
        if key is None:
            return  # nobody's job (the timer dead-letters it)
        if value is None:
            self._records.pop(key, None)
        else:
            self._records[key] = value  # decoded when first read (`record`)

    def record(self, job_id: str) -> dict[str, Any] | None:
        """The definition held for `job_id`, decoded once; a record that is not a definition
        deletes the job, as it did when decoded on arrival. Called inside a read (`read`)."""
        held = self._records.get(job_id)
        if not isinstance(held, bytes):
            return held
        record = _definition_of(held)
        if record is None:
            del self._records[job_id]
        else:
            self._records[job_id] = record
        return record

    def records(self) -> list[dict[str, Any]]:
        """Every definition held, decoded, by job id. Called inside a read (`read`)."""
        records = [self.record(job_id) for job_id in list(self._records)]
        return sorted((r for r in records if r is not None), key=lambda d: d["jobId"])

    def get(self, job_id: str, partition: int) -> dict[str, Any] | None:
        """The current definition of `job_id` (which lives in `partition`), or None."""
        ends = {(self.topic, partition): self.end_of(partition)}
        return self.follower.read(ends, lambda: self.record(job_id))

    def list(self) -> list[dict[str, Any]]:
        """Every current definition, by job id."""
        ends = {(self.topic, p): self.end_of(p) for p in self.partitions}
        return self.follower.read(ends, self.records)

    def close(self) -> None:
        self.follower.close()


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
