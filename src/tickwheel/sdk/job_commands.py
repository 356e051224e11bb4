"""Job writes as commands to the single writer (docs/decisions/0099, 0126).

    writer = JobCommandWriter(bootstrap)            # follows jobs.verdicts from its end
    verdict = writer.submit("update", "nightly", record, expected_version=3)
    verdict.outcome                                 # updated, version_conflict, not_found, ...

A command goes to `jobs.commands` (key = job id, so the partition of `jobs.definitions` the
job lives on); the judge owning that partition answers on `jobs.verdicts` in the transaction
that wrote the change. `submit` waits for the verdict up to `wait_s` and raises
`VerdictPending` (with the command id) when it has not come: the command is acknowledged and
will be judged; `status(command_id)` answers later from the verdicts this writer has seen.

`submit_async` is the same for a coroutine, holding no thread while it waits (decision
0165). A command's id names its tenant (`tagged_command_id`), so any instance following
`jobs.verdicts` can tell whose it is, with or without a job in its verdict (decision 0166).

Which path the SDK's writes take (`write_path()`, `WritePath`) is `job_write_path`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode
from tickwheel.adapters.kafka.fatal import FatalClientError
from tickwheel.adapters.kafka.producer import ProduceFailed
from tickwheel.adapters.kafka.reader import decode_key
from tickwheel.clock import Clock, SystemClock
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.ports.kafka import KafkaClients
from tickwheel.records import (
    JobCommand,
    JobCommandKind,
    JobDefinition,
    JobVerdict,
    JobVerdictOutcome,
)
from tickwheel.sdk.acked_sends import AckedSends
from tickwheel.sdk.command_ids import tagged_command_id
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.sdk")

WAIT_S = 5.0
SEEN_KEPT = 100_000  # verdicts of this writer's commands kept for `status`
ACK_WAIT_S = 30.0  # a command's acknowledgement, as `EventProducer.deliver` waits


class VerdictPending(TickwheelError, TimeoutError):
    """The command was accepted by Kafka but its verdict did not come in time."""

    def __init__(self, command_id: str, job_id: str, waited_s: float) -> None:
        super().__init__(
            f"no verdict for command {command_id} (job {job_id!r}) within "
            f"{waited_s:g}s; it will be judged: ask for it by id"
        )
        self.command_id, self.job_id = command_id, job_id


class VersionConflict(InvalidInput):
    """The job is not at the version the writer expected (`current_version` is where it is)."""

    def __init__(self, job_id: str, current_version: int, expected: int) -> None:
        super().__init__(
            "expectedVersion", f"job {job_id!r} is at version {current_version}, not {expected}"
        )
        self.job_id, self.current_version = job_id, current_version


@dataclass(frozen=True, slots=True)
class Verdict:
    command_id: str
    job_id: str
    outcome: JobVerdictOutcome
    current_version: int | None
    definition: JobDefinition | None
    idempotency_recorded: bool
    detail: str | None

    @classmethod
    def of(cls, value: JobVerdict, sent: tuple[bytes, Any] | None = None) -> Verdict:
        """The verdict, its definition decoded, unless it is the very bytes the command sent
        (`sent`: those bytes and the record they encode), as an accepted create's are (the
        judge keeps the writer's bytes, decision 0126): then that record, not decoded again."""
        raw = value["definition"]
        if raw is None:
            definition = None
        elif sent is not None and raw == sent[0]:
            definition = sent[1]
        else:
            definition = decode_as(JobDefinition, raw)
        return cls(
            value["command_id"],
            value["job_id"],
            value["outcome"],
            value["current_version"],
            definition,
            value["idempotency_recorded"],
            value["detail"],
        )


class _Waiting:
    """One command waiting for its verdict: a thread (`done`), or a coroutine (`future` on
    `loop`, resolved from the follower's thread with one `call_soon_threadsafe` per drain)."""

    __slots__ = ("done", "future", "loop", "sent", "verdict")

    def __init__(
        self, sent: tuple[bytes, Any] | None = None, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self.done = threading.Event()
        self.verdict: Verdict | None = None
        self.sent = sent
        self.loop = loop
        self.future: asyncio.Future[Verdict] | None = None if loop is None else loop.create_future()


def _wake(futures: list[tuple[asyncio.Future[Verdict], Verdict | BaseException]]) -> None:
    """On the waiters' loop: each future gets its verdict (or the follower's failure)."""
    for future, outcome in futures:
        if future.done():
            continue  # its coroutine gave up (a 202) or was cancelled
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


class JobCommandWriter:
    """Publishes job commands and waits for their verdicts, following `jobs.verdicts` from
    the end it had when made (so every verdict of a command sent after that is seen)."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clients: KafkaClients[Any] | None = None,
        clock: Clock | None = None,
        wait_s: float = WAIT_S,
        instance: str | None = None,
    ) -> None:
        if clients is None:
            from tickwheel.adapters.kafka.broker_clients import BrokerClients

            clients = BrokerClients(bootstrap)
        from tickwheel.adapters.kafka.client import TopicPartition

        self.clock = clock or SystemClock()
        self.wait_s = wait_s
        self.instance = instance or f"writer-{uuid.uuid4()}"
        self.commands = topic_name("jobs.commands")
        self.verdicts = topic_name("jobs.verdicts")
        # Taken before the follower is placed at the end: every verdict of a command sent
        # after this instant is read here (a status for one not read yet is `pending`).
        self.following_since_ms = int(self.clock.now() * 1000)
        self._producer = clients.events()
        self._consumer = clients.consumer(
            f"tickwheel-verdicts-{uuid.uuid4()}",
            # A verdict answers the held fetch at once: the wait only paces idle asks (0152).
            **{"enable.partition.eof": False, "fetch.wait.max.ms": 100},
        )
        reader = clients.reader()
        partitions = range(reader.partition_count(self.verdicts))
        ends = {p: reader.watermarks(self.verdicts, p)[1] for p in partitions}
        self._consumer.assign([TopicPartition(self.verdicts, p, end) for p, end in ends.items()])
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        self._seen: OrderedDict[str, Verdict] = OrderedDict()
        # Others' commands' verdicts, as read (decoded when a status read asks for one).
        self._heard: OrderedDict[str, JobVerdict | bytes] = OrderedDict()
        self._mine: set[str] = set()  # sent by this writer and not answered yet
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._acks = AckedSends(self._producer)
        self._thread = threading.Thread(target=self._follow, name="verdicts", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            while not self._stop.is_set():
                # `consume(n, t)` returns when it has n messages or t has passed: it would add
                # t to every verdict. `poll` returns with the first; the rest are drained.
                first = self._consumer.poll(0.1)
                if first is None:
                    self._stop.wait(0.002)  # the in-memory broker answers at once
                    continue
                answered = []
                for message in [first, *self._consumer.consume(5000, 0)]:
                    if message.error() or message.value() is None:
                        continue
                    key, is_text = decode_key(message.key())
                    if key is not None and is_text and self._heard_only(key, message.value()):
                        continue  # another writer's: not decoded unless a status read asks
                    waiting = self._answer(decode_as(JobVerdict, message.value() or b""))
                    if waiting is not None:
                        answered.append(waiting)
                self._wake(answered)
        except Exception as exc:  # reported to every waiter from now on
            self._failure = exc
            with self._lock:
                everyone = list(self._waiting.values())
            self._wake(everyone, exc)
            if isinstance(exc, FatalClientError):
                raise  # the process's to act on (decision 0200): a service exits, restarted

    def _wake(self, answered: list[_Waiting], failure: BaseException | None = None) -> None:
        """Wake each waiter: a thread by its event, the coroutines of one loop with one
        hand-over to that loop for the whole drain (not one per verdict)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        for waiting in answered:
            if waiting.loop is None or waiting.future is None:
                waiting.done.set()
                continue
            outcome = failure if failure is not None else waiting.verdict
            by_loop.setdefault(waiting.loop, []).append((waiting.future, outcome))
        for loop, futures in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile
                loop.call_soon_threadsafe(_wake, futures)

    def _heard_only(self, command_id: str, raw: bytes) -> bool:
        """Keep another writer's verdict (its key is its command's id) as the bytes read;
        False when the command is this writer's (the caller decodes and answers it)."""
        with self._lock:
            if command_id in self._mine:
                return False
            if command_id not in self._seen:
                self._heard[command_id] = raw
                if len(self._heard) > SEEN_KEPT:
                    self._heard.popitem(last=False)
            return True

    def _answer(self, value: JobVerdict) -> _Waiting | None:
        """Keep the verdict; the waiter it answers (woken by the caller), if any."""
        command_id = value["command_id"]
        with self._lock:
            if command_id not in self._mine:
                # Another writer's command (another API instance's): kept undecoded for
                # `status` (the route checks the job's tenant, or the command's, decision 0166).
                if command_id not in self._seen:
                    self._heard[command_id] = value
                    if len(self._heard) > SEEN_KEPT:
                        self._heard.popitem(last=False)
                return None
            waiting = self._waiting.pop(command_id, None)
            verdict = Verdict.of(value, None if waiting is None else waiting.sent)
            self._mine.discard(command_id)
            self._seen[verdict.command_id] = verdict
            if len(self._seen) > SEEN_KEPT:
                self._seen.popitem(last=False)
        if waiting is not None:
            waiting.verdict = verdict
        return waiting

    def status(self, command_id: str) -> Verdict | str | None:
        """The verdict of a command this writer sent, `pending` while none came; the verdict
        of another writer's command that carries the job, once it is on `jobs.verdicts` (any API
        instance answers a 202's status resource); else None (unknown, or forgotten)."""
        with self._lock:
            if command_id in self._seen:
                return self._seen[command_id]
            if command_id in self._mine:
                return "pending"
            heard = self._heard.get(command_id)
        if isinstance(heard, bytes):
            try:
                heard = decode_as(JobVerdict, heard)
            except UndecodableRecord:
                return None  # not a verdict: nobody's answer
        return None if heard is None else Verdict.of(heard)

    def _prepare(
        self,
        kind: JobCommandKind,
        job_id: str,
        definition: Mapping[str, Any] | None,
        expected_version: int | None,
        loop: asyncio.AbstractEventLoop | None,
        extras: Mapping[str, Any],
    ) -> tuple[str, bytes, _Waiting]:
        """The command's id and bytes, and its waiter, registered before it is sent (its
        verdict may come before the acknowledgement is served)."""
        now_ms = int(self.clock.now() * 1000)
        # The tenant the id names: the caller's (`for_tenant`: a delete's command carries no
        # definition to say it), else the command's own.
        command_id = tagged_command_id(extras.get("for_tenant") or extras.get("tenant_id"), now_ms)
        raw = None if definition is None else encode("JobDefinition", definition)
        command: JobCommand = {
            "command_id": command_id,
            "job_id": job_id,
            "kind": kind,
            "expected_version": expected_version,
            "definition": raw,
            "tenant_id": extras.get("tenant_id"),
            "idempotency_slot": extras.get("idempotency_slot"),
            "fingerprint": extras.get("fingerprint"),
            "idempotency_answer": extras.get("idempotency_answer"),
            "requested_at": now_ms,
            "reply_to": self.instance,
        }
        waiting = _Waiting(None if raw is None else (raw, definition), loop)
        with self._lock:
            self._waiting[command_id] = waiting
            self._mine.add(command_id)
        return command_id, encode("JobCommand", command), waiting

    def _forget(self, command_id: str, sent: bool) -> None:
        with self._lock:
            self._waiting.pop(command_id, None)
            if not sent:
                self._mine.discard(command_id)

    def submit(
        self,
        kind: JobCommandKind,
        job_id: str,
        definition: Mapping[str, Any] | None,
        expected_version: int | None = None,
        **extras: Any,
    ) -> Verdict:
        """Send the command, wait for its verdict (`tenant_id`, `idempotency_slot`,
        `fingerprint`, `idempotency_answer` ride along)."""
        command_id, value, waiting = self._prepare(
            kind, job_id, definition, expected_version, None, extras
        )
        try:
            deliver = getattr(self._producer, "deliver", None)
            if deliver is not None:  # its own acknowledgement only (decision 0100)
                deliver(self.commands, job_id, value)
            else:
                self._producer.send(self.commands, job_id, value)
                self._producer.flush()
        except BaseException:
            self._forget(command_id, sent=False)
            raise
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        started = time.monotonic()
        waiting.done.wait(self.wait_s)
        if self._failure is not None:
            raise self._failure
        if waiting.verdict is None:
            self._forget(command_id, sent=True)
            raise VerdictPending(command_id, job_id, time.monotonic() - started)
        return waiting.verdict

    def can_await(self) -> bool:
        """Whether `submit_async` waits with no thread of its own (a producer whose delivery
        reports a poll thread serves); else it runs `submit` on a thread."""
        return hasattr(self._producer, "poll")

    async def submit_async(
        self,
        kind: JobCommandKind,
        job_id: str,
        definition: Mapping[str, Any] | None,
        expected_version: int | None = None,
        **extras: Any,
    ) -> Verdict:
        """`submit` for a coroutine, holding no thread while it waits (decision 0165): the
        command's delivery report and its verdict resolve futures on the caller's loop."""
        if not self.can_await():
            return await asyncio.to_thread(
                self.submit, kind, job_id, definition, expected_version, **extras
            )
        loop = asyncio.get_running_loop()
        command_id, value, waiting = self._prepare(
            kind, job_id, definition, expected_version, loop, extras
        )
        assert waiting.future is not None
        acked: asyncio.Future[None] = loop.create_future()
        try:
            self._acks.send(self.commands, job_id, value, loop, acked)
            await asyncio.wait_for(acked, ACK_WAIT_S)
        except BaseException as exc:
            self._forget(command_id, sent=False)
            if isinstance(exc, TimeoutError):
                raise ProduceFailed(
                    f"{self.commands}: not delivered within {ACK_WAIT_S}s"
                ) from None
            raise
        # A duration, not an instant: the monotonic counter is no clock reading to inject.
        started = time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.shield(waiting.future), self.wait_s)
        except TimeoutError:
            self._forget(command_id, sent=True)
            if self._failure is not None:
                raise self._failure from None
            raise VerdictPending(command_id, job_id, time.monotonic() - started) from None

    def close(self) -> None:
        self._stop.set()
        self._acks.close()
        self._thread.join(timeout=10)
        self._consumer.close()
