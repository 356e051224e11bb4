"""The API's job reads from its followed catalogue, fresh by decision 0139's rule.

`FollowedJobs` is the `JobsLike` the routes read through: `get` and `list` answer from the
SDK's `DefinitionCatalogue` once its follower has passed an end offset recent enough
(`tickwheel.services.api.freshness`: this instance's own writes at once, anyone else's within
the window), so a read costs no broker round trip while the ends are fresh. Writes go to the
write path's client unchanged (its own checks still ask the broker for every end: a create's
"is the id free" and an update's version check are not relaxed), and each write marks its
job's partition so that the next read asks for an end after it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.adapters.kafka.follower import Place
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.records import JobDefinition
from tickwheel.sdk.catalogue import CataloguedJobsClient, DefinitionCatalogue
from tickwheel.sdk.jobs import UnknownJob
from tickwheel.services.api.freshness import FreshReads, window_from_env


class FollowedJobs:
    """`JobsLike`: reads from `catalogue` at recent ends (`FreshReads`), writes through
    `writer` (whose own checks ask fresh ends of the same catalogue)."""

    def __init__(
        self,
        writer: CataloguedJobsClient,
        catalogue: DefinitionCatalogue,
        window_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer = writer
        self.catalogue = catalogue
        window = window_from_env(dict(os.environ)) if window_s is None else window_s
        self.fresh = FreshReads(catalogue.follower, window, monotonic)

    def _place(self, job_id: str) -> Place:
        topic = self.catalogue.topic
        return (topic, partition_for(job_id, len(self.catalogue.partitions)))

    def get(self, job_id: str) -> dict[str, Any]:
        record = self.fresh.read([self._place(job_id)], lambda: self.catalogue.record(job_id))
        if record is None:
            raise UnknownJob(job_id)
        return record

    def list(self) -> list[dict[str, Any]]:
        places = self.catalogue.follower.every(self.catalogue.topic)
        return self.fresh.read(places, self.catalogue.records)

    def _wrote(self, job_id: Any) -> None:
        if isinstance(job_id, str):
            self.fresh.wrote(self._place(job_id))

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] | None = None
        try:
            created = self.writer.create(spec)
            return created
        finally:
            # Marked even when the create failed: a timed-out write may still have landed.
            self._wrote((created or spec).get("jobId"))

    def creates_await(self) -> bool:
        return self.writer.creates_await()

    async def create_async(self, spec: Mapping[str, Any]) -> JobDefinition:
        try:
            created = await self.writer.create_async(spec)
        except BaseException:
            # Marked even when the create failed: a timed-out write may still have landed.
            self._wrote(spec.get("jobId"))
            raise
        self._wrote(created["jobId"])  # the id the record got (a spec may name none)
        return created

    async def update_async(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        try:
            return await self.writer.update_async(job_id, changes, expected_version)
        finally:
            self._wrote(job_id)

    async def delete_async(self, job_id: str) -> None:
        try:
            await self.writer.delete_async(job_id)
        finally:
            self._wrote(job_id)  # marked even when it failed: a late delete may still land

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        try:
            return self.writer.update(job_id, changes, expected_version)
        finally:
            self._wrote(job_id)

    def delete(self, job_id: str) -> None:
        try:
            self.writer.delete(job_id)
        finally:
            self._wrote(job_id)

    def trigger(self, job_id: str) -> dict[str, Any]:
        return self.writer.trigger(job_id)

    def backfill(
        self, job_id: str, from_ms: int, to_ms: int, command_id: str | None = None
    ) -> dict[str, Any]:
        return self.writer.backfill(job_id, from_ms, to_ms, command_id)

    def __getattr__(self, name: str) -> Any:
        # The write path's other calls (a command's status, decision 0099's judge) are the
        # writer's: routes find them with hasattr, so they are passed through, not listed.
        if name in ("writer", "catalogue", "fresh"):
            raise AttributeError(name)
        return getattr(self.writer, name)

    def close(self) -> None:
        self.writer.close()
        self.catalogue.close()
