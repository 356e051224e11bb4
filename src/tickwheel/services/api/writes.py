"""How the API writes a definition.

With the single writer running (decisions 0099, 0126), a create, update or delete is a
command the judge owning the job's partition answers; the API waits for the verdict
(`JobsClient`'s command path). A keyed create carries its idempotency answer, which the judge
records in the verdict's transaction (`KeyedWrite`, set by the route around the call).

Without a judge (the direct path, decision 0101): each request waits for its own record's
acknowledgement, not for a flush of everything in flight (decision 0100).

`JobsClient` publishes with `send` then `flush`, right for a CLI that writes one record. In
the API dozens of requests share one producer: each flush waited until nothing was in flight,
so every request also waited for the records of the requests beside it, and none could share
a batch for long. `EventProducer.deliver` waits for one record's delivery report; a 201 still
means the definition is acknowledged by the broker (`acks=all`, idempotent producer).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.clock import Clock
from tickwheel.records import JobCommandKind
from tickwheel.sdk.catalogue import CataloguedJobsClient, DefinitionCatalogue
from tickwheel.sdk.job_commands import Verdict
from tickwheel.services.api.tenancy import ACTING_TENANT

# Locks striped by job id: bounded memory, and writes to different jobs rarely share one.
WRITE_STRIPES = 256
VERDICT_WAIT_S = 5.0


@dataclass
class KeyedWrite:
    """A create made with an Idempotency-Key: what the judge records if it accepts it.
    `render(record)` is the answer (status, body, headers) the route would send for the
    record; `answer` keeps the one rendered, `recorded` says whether the judge wrote it."""

    slot: str
    fingerprint: str
    request_id: str
    render: Callable[[dict[str, Any]], tuple[int, bytes, dict[str, str]]]
    answer: tuple[int, bytes, dict[str, str]] | None = None
    recorded: bool = False


# Set by the route around a keyed create, read by the jobs client that sends the command.
KEYED_WRITE: ContextVar[KeyedWrite | None] = ContextVar("keyed_write", default=None)


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
        super().__init__(
            bootstrap, clock, catalogue or DefinitionCatalogue(bootstrap, shared_ends=True)
        )
        # A request does not wait long: a late verdict is a 202 and its status resource.
        self.writes.wait_s = VERDICT_WAIT_S
        self._producer_lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(WRITE_STRIPES)]

    def _job_lock(self, job_id: str) -> threading.Lock:
        return self._stripes[hash(job_id) % WRITE_STRIPES]

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        job_id = spec.get("jobId")
        if not isinstance(job_id, str) or self.writes.commands():
            return super().create(spec)  # a generated id is nobody else's; the judge judges
        with self._job_lock(job_id):
            return super().create(spec)

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        if self.writes.commands():
            return super().update(job_id, changes, expected_version)
        with self._job_lock(job_id):
            return super().update(job_id, changes, expected_version)

    def delete(self, job_id: str) -> None:
        if self.writes.commands():
            super().delete(job_id)
            return
        with self._job_lock(job_id):
            super().delete(job_id)

    def _command_extras(self, kind: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
        acting = ACTING_TENANT.get()
        extras: dict[str, Any] = {} if acting is None else {"for_tenant": acting}
        keyed = KEYED_WRITE.get()
        if kind != "create" or keyed is None or record is None:
            return extras
        keyed.answer = status, body, headers = keyed.render(dict(record))
        answer = {
            "status": status,
            "body": body.decode(),
            "headers": headers,
            "request_id": keyed.request_id,
        }
        return {
            **extras,
            "idempotency_slot": keyed.slot,
            "fingerprint": keyed.fingerprint,
            "idempotency_answer": json.dumps(answer),
        }

    def _submit(
        self,
        kind: JobCommandKind,
        job_id: str,
        record: dict[str, Any] | None,
        expected: int | None,
    ) -> Verdict:
        verdict = super()._submit(kind, job_id, record, expected)
        keyed = KEYED_WRITE.get()
        if keyed is not None and verdict.idempotency_recorded:
            keyed.recorded = True
        return verdict

    async def _submit_async(
        self,
        kind: JobCommandKind,
        job_id: str,
        record: Mapping[str, Any] | None,
        expected: int | None,
    ) -> Verdict:
        verdict = await super()._submit_async(kind, job_id, record, expected)
        keyed = KEYED_WRITE.get()
        if keyed is not None and verdict.idempotency_recorded:
            keyed.recorded = True
        return verdict

    def _writer(self) -> EventProducer:
        with self._producer_lock:
            if self._producer is None:
                self._producer = EventProducer(self.bootstrap)
            return self._producer

    def _publish(self, topic: str, key: str, value: bytes | None) -> None:
        self._writer().deliver(topic, key, value)
