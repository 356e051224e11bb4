"""What one partition's single writer decides, without Kafka I/O (decisions 0099, 0126).

The judge holds the partition's catalogue (every live definition of partition p of
`jobs.definitions`, as the bytes on the topic and decoded) and judges each command of
`jobs.commands` partition p in log order:

- a create is accepted if no job has the id;
- an update or a delete if the job exists, is the command's tenant's (when it names one) and
  is at `expected_version` (when it names one).

An accepted command's definition (version + 1; a create's is 1) or tombstone, its verdict,
its idempotency record and a dead letter for an unreadable command are gathered into the
partition's `Batch`, which the service writes in one transaction with the commands' offsets.
The catalogue changes as each command is judged, so the next command of the same batch sees
it; if the transaction fails the service drops the partition and restores it from Kafka, so a
change never outlives its transaction.

Direct producers (definitions written to `jobs.definitions` by anyone but a judge) are folded
in with `fold_direct`: last writer wins, and a later command is judged against them.

A command read on a partition that does not own its job (a producer placing keys by the
partition count before a resize, or a command written before it: decision 0211) is not
judged here: `forward` puts it, unchanged, in the batch for its owner partition, so it leaves
in the transaction that moves this partition's offset past it (exactly once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_of
from tickwheel.adapters.kafka.placement import Forward
from tickwheel.ports.kafka import ReadRecord
from tickwheel.records import (
    IdempotencyRecord,
    JobCommand,
    JobDefinition,
    JobVerdict,
    JobVerdictOutcome,
)

# A definition the judge wrote carries this header, so the judge's follower of
# jobs.definitions can tell its own writes (already in the catalogue) from direct producers'.
WRITER_HEADER = "tickwheel-writer"
WRITER_VALUE = b"jobwriter"
DEFAULT_TENANT = "default"


@dataclass(frozen=True, slots=True)
class Stored:
    """A live definition: decoded, and the bytes on jobs.definitions (a verdict carries them)."""

    record: JobDefinition
    raw: bytes


@dataclass
class Batch:
    """What one partition's transaction carries besides the commands' offset."""

    definitions: list[tuple[str, bytes | None]] = field(default_factory=list)
    verdicts: list[tuple[str, bytes]] = field(default_factory=list)
    idempotency: list[tuple[str, bytes]] = field(default_factory=list)
    dead_letters: list[tuple[str | None, bytes]] = field(default_factory=list)
    forwarded: list[Forward] = field(default_factory=list)  # in the order they were read
    outcomes: dict[str, int] = field(default_factory=dict)  # by outcome, for the metrics
    requested_at: list[int] = field(default_factory=list)  # of the judged, for the latency
    commands: int = 0

    def __bool__(self) -> bool:
        return bool(self.verdicts or self.dead_letters or self.forwarded)

    @classmethod
    def merged(cls, batches: list[Batch]) -> Batch:
        """What several partitions' batches hold together (one transaction's, for figures)."""
        out = cls()
        for batch in batches:
            out.definitions += batch.definitions
            out.verdicts += batch.verdicts
            out.idempotency += batch.idempotency
            out.dead_letters += batch.dead_letters
            out.forwarded += batch.forwarded
            out.requested_at += batch.requested_at
            out.commands += batch.commands
            for outcome, count in batch.outcomes.items():
                out.outcomes[outcome] = out.outcomes.get(outcome, 0) + count
        return out


def owner_of(record: JobDefinition) -> str:
    return record.get("tenantId") or DEFAULT_TENANT


class PartitionJudge:
    def __init__(self, partition: int, command_ttl_ms: int) -> None:
        self.partition = partition
        self.command_ttl_ms = command_ttl_ms
        self.catalogue: dict[str, Stored] = {}
        self.batch = Batch()

    # -- the catalogue -----------------------------------------------------------------------
    def load(self, key: str | None, value: bytes | None) -> None:
        """A record of jobs.definitions (restore, or a direct producer's write): last writer
        wins, a tombstone deletes, a record that is not a definition is nobody's job (the
        timer dead-letters it)."""
        if key is None:
            return
        if value is None:
            self.catalogue.pop(key, None)
            return
        try:
            record = decode_as(JobDefinition, value)
        except UndecodableRecord:
            return
        self.catalogue[key] = Stored(record, value)

    def fold_direct(self, record: ReadRecord) -> bool:
        """Fold a record the follower read; False (ignored) when a judge wrote it."""
        if any(name == WRITER_HEADER for name, _ in record.headers):
            return False
        self.load(record.key if record.key_is_text else None, record.value)
        return True

    def take(self) -> Batch:
        batch, self.batch = self.batch, Batch()
        return batch

    # -- judging -----------------------------------------------------------------------------
    def receive(self, record: ReadRecord, now_ms: int) -> None:
        """Judge one record of jobs.commands into the batch."""
        self.batch.commands += 1
        if record.value is None:
            return  # a tombstone on a delete-only topic: nothing asked
        try:
            command = decode_as(JobCommand, record.value)
        except UndecodableRecord as exc:
            self._dead_letter(record, exc.reason, "undecodable", now_ms)
            return
        if command["job_id"] != record.key:
            self._dead_letter(
                record,
                f"key {record.key!r} is not the command's job_id {command['job_id']!r}",
                "rejected",
                now_ms,
            )
            return
        self.batch.requested_at.append(int(command["requested_at"]))
        age = now_ms - int(command["requested_at"])
        if age > self.command_ttl_ms:
            # Nobody waits for it any more (a first start of the judge over an old log, or a
            # long outage): judging it now could apply a change its writer gave up on.
            self._verdict(
                command,
                "invalid",
                None,
                now_ms,
                detail=f"expired: requested {age} ms ago, over the judge's "
                f"{self.command_ttl_ms} ms",
            )
            return
        try:
            self._judge(command, now_ms)
        except (UndecodableRecord, KeyError, TypeError, ValueError) as exc:
            self._verdict(command, "invalid", None, now_ms, detail=str(exc) or repr(exc))

    def forward(self, record: ReadRecord, owner: int) -> None:
        """Pass `record` on to partition `owner`, which owns its key: not judged here."""
        assert record.key is not None, "a record without a key has no owner partition"
        self.batch.commands += 1
        self.batch.forwarded.append(
            Forward(
                record.topic, record.key, record.value, owner, record.offset, tuple(record.headers)
            )
        )

    def _judge(self, command: JobCommand, now_ms: int) -> None:
        job_id, kind = command["job_id"], command["kind"]
        current = self.catalogue.get(job_id)
        tenant = command["tenant_id"]
        if current is not None and tenant is not None and owner_of(current.record) != tenant:
            # Another tenant's job: a create says the id is taken, the rest say no such job,
            # and neither says whose it is (decision 0068).
            outcome: JobVerdictOutcome = "exists" if kind == "create" else "not_found"
            self._verdict(command, outcome, None, now_ms)
            return
        if kind == "create":
            if current is not None:
                self._verdict(command, "exists", current, now_ms)
                return
            self._write(command, job_id, self._definition(command, None), "created", now_ms)
            return
        if current is None:
            self._verdict(command, "not_found", None, now_ms)
            return
        expected = command["expected_version"]
        if expected is not None and expected != current.record["version"]:
            self._verdict(command, "version_conflict", current, now_ms)
            return
        if kind == "delete":
            self._write(command, job_id, None, "deleted", now_ms)
            return
        self._write(command, job_id, self._definition(command, current), "updated", now_ms)

    def _definition(self, command: JobCommand, current: Stored | None) -> Stored:
        """The definition to write: the command's, at the version after `current`'s (1 for a
        create), keeping the job's creation time. The writer's bytes are kept when they
        already say so (the usual case: the writer put expected + 1)."""
        raw = command["definition"]
        if raw is None:
            raise ValueError(f"a {command['kind']} needs a definition")
        record = decode_as(JobDefinition, raw)
        if record["jobId"] != command["job_id"]:
            raise ValueError(
                f"the definition's jobId {record['jobId']!r} is not the "
                f"command's {command['job_id']!r}"
            )
        version = 1 if current is None else int(current.record["version"]) + 1
        created = record["createdAt"] if current is None else current.record["createdAt"]
        if record["version"] != version or record["createdAt"] != created:
            record = record.copy()
            record["version"], record["createdAt"] = version, created
            raw = encode("JobDefinition", record)
        return Stored(record, raw)

    def _write(
        self,
        command: JobCommand,
        job_id: str,
        stored: Stored | None,
        outcome: JobVerdictOutcome,
        now_ms: int,
    ) -> None:
        self.batch.definitions.append((job_id, None if stored is None else stored.raw))
        if stored is None:
            self.catalogue.pop(job_id, None)
        else:
            self.catalogue[job_id] = stored
        recorded = self._record_answer(command, now_ms)
        self._verdict(command, outcome, stored, now_ms, recorded=recorded)

    def _record_answer(self, command: JobCommand, now_ms: int) -> bool:
        """The idempotency record of an accepted command, in its transaction: a crash can no
        longer separate the effect from the answer a retry gets (decision 0069's gap)."""
        slot, answer = command["idempotency_slot"], command["idempotency_answer"]
        fingerprint = command["fingerprint"]
        if not slot or not answer or not fingerprint:
            return False
        tenant, _, key = slot.partition("/")
        reply = json.loads(answer)
        # The answer is JSON the API wrote (an HTTP edge), the record a typed one.
        record: IdempotencyRecord = {
            "tenant_id": tenant,
            "idempotency_key": key,
            "fingerprint": fingerprint,
            "status": int(reply["status"]),
            "body": reply["body"],
            "headers": json.dumps(reply.get("headers") or {}),
            "created_at": now_ms,
            "request_id": reply.get("request_id") or "",
        }
        self.batch.idempotency.append((slot, encode("IdempotencyRecord", record)))
        return True

    def _verdict(
        self,
        command: JobCommand,
        outcome: JobVerdictOutcome,
        stored: Stored | None,
        now_ms: int,
        *,
        recorded: bool = False,
        detail: str | None = None,
    ) -> None:
        verdict: JobVerdict = {
            "command_id": command["command_id"],
            "job_id": command["job_id"],
            "outcome": outcome,
            "current_version": None if stored is None else int(stored.record["version"]),
            "definition": None if stored is None else stored.raw,
            "judged_at": now_ms,
            "idempotency_recorded": recorded,
            "detail": detail,
        }
        self.batch.verdicts.append((command["command_id"], encode("JobVerdict", verdict)))
        self.batch.outcomes[outcome] = self.batch.outcomes.get(outcome, 0) + 1

    def _dead_letter(self, record: ReadRecord, reason: str, kind: str, now_ms: int) -> None:
        letter = dead_letter_of(record, reason, kind, now_ms)
        self.batch.dead_letters.append((record.key, encode("DeadLetter", letter)))
