"""Dead letters as a reader sees them: every record on `executions.dlq`, decoded.

    from tickwheel.sdk.dead_letters import read_dead_letters
    for letter in read_dead_letters():
        print(letter["dead_letter_id"], letter["reason"])

A record on the topic that is not a `DeadLetter` is left out (it has nothing to say). The
raw bytes of an undecodable source record are given as base64 (`raw_value_base64`).

Retrying or discarding one records a `DeadLetterResolution` on `executions.dlq.resolutions`
(decision 0102), after which the letter is no longer unresolved:

    from tickwheel.sdk.dead_letters import DeadLettersClient
    letters = DeadLettersClient()
    letters.retry("dlq:3f0c...", by="ops:ana", note="upstream fixed")
    letters.discard("undecodable:jobs.definitions:2:41", by="ops:ana", note="test junk")

What a retry does depends on the letter (`retry_plan`): an execution that exhausted its
attempts (or failed permanently) is asked of its job's owning timer again as a trigger, a new
execution with fresh attempts; a record that could not be decoded or was refused (a bad
definition, a bad command), a job the timer set aside, and a workflow step's execution cannot
be retried unchanged, and can only be discarded (a step is retried from its workflow).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode
from tickwheel.adapters.kafka.placement import step_workflow
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.identity import execution_id as execution_id_of
from tickwheel.errors import TickwheelError
from tickwheel.records import DeadLetter, DeadLetterAction, DeadLetterResolution
from tickwheel.topology import topic_name

RESOLUTIONS_TOPIC = "executions.dlq.resolutions"
MAX_NOTE_CHARS = 500


def read_dead_letters(bootstrap: str | None = None) -> list[dict[str, Any]]:
    """Every dead letter on the topic, oldest first by `event_time` (then id); a letter
    written twice (the same deterministic id) is listed once."""
    seen: dict[str, dict[str, Any]] = {}
    for record in read_to_end(topic_name("executions.dlq"), None, bootstrap):
        if record.value is None:
            continue
        try:
            decoded = decode_as(DeadLetter, record.value)
        except UndecodableRecord:
            continue
        # A reader's view (JSON: what the CLI and the API show), not the record: the raw bytes
        # as base64, where on the topic it lies, later its resolution.
        letter: dict[str, Any] = dict(decoded)
        raw = letter.pop("raw_value", None)
        letter["raw_value_base64"] = base64.b64encode(raw).decode() if raw is not None else None
        letter["dlq_partition"] = record.partition
        letter["dlq_offset"] = record.offset
        seen.setdefault(letter["dead_letter_id"], letter)
    return sorted(seen.values(), key=lambda d: (d["event_time"], d["dead_letter_id"]))


class UnknownDeadLetter(TickwheelError, LookupError):
    """No dead letter on the topic has the id asked for."""

    def __init__(self, dead_letter_id: str) -> None:
        super().__init__(
            f"no dead letter {dead_letter_id!r}; accepted: an id `tickwheel dead-letters list` shows"
        )
        self.dead_letter_id = dead_letter_id


class NotRetryable(TickwheelError, ValueError):
    """The dead letter cannot be retried unchanged; `reason` says why (discard it instead)."""

    def __init__(self, dead_letter_id: str, reason: str) -> None:
        super().__init__(
            f"dead letter {dead_letter_id!r} cannot be retried: {reason}; "
            "accepted: discard it (after fixing the cause)"
        )
        self.dead_letter_id = dead_letter_id
        self.reason = reason


class AlreadyResolved(TickwheelError, ValueError):
    """The dead letter was retried or discarded already; `resolution` says when and by whom."""

    def __init__(self, resolution: Mapping[str, Any]) -> None:
        super().__init__(
            f"dead letter {resolution['dead_letter_id']!r} was {resolution['action']} already "
            f"by {resolution['by']}; accepted: an unresolved dead letter"
        )
        self.resolution = dict(resolution)


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """What retrying a letter means: `trigger` its job again, or nothing (`reason` says why)."""

    action: Literal["trigger", "none"]
    reason: str = ""
    job_id: str | None = None


def retry_plan(letter: Mapping[str, Any]) -> RetryPlan:
    """Pure: what a retry of `letter` does. Only an execution's dead letter can be retried,
    by asking the job's timer for a new execution; a record that was refused or could not be
    read would be refused again unchanged."""
    letter_id = str(letter.get("dead_letter_id", ""))
    job_id = letter.get("job_id")
    workflow = step_workflow(job_id)
    if workflow is not None:
        return RetryPlan(
            "none",
            f"it is a step of workflow {workflow!r}: the workflow decides "
            "its steps, retry the step there",
        )
    if letter.get("execution_id") is None or not job_id:
        kind = letter_id.split(":", 1)[0]
        why = {
            "undecodable": "its record could not be decoded, and would not be again",
            "rejected": "its record was refused, and would be again unchanged",
            "job": "the timer set its job aside; edit the job to fix it",
        }
        return RetryPlan("none", why.get(kind, "it names no execution to run again"))
    return RetryPlan("trigger", job_id=str(job_id))


class JobsLike(Protocol):
    """What a retry needs of a job client (`JobsClient`, or the API's tenant view of one)."""

    def get(self, job_id: str) -> dict[str, Any]: ...

    def trigger(self, job_id: str) -> dict[str, Any]: ...


def read_resolutions(bootstrap: str | None = None) -> dict[str, DeadLetterResolution]:
    """The latest resolution of each resolved dead letter, by dead letter id."""
    out: dict[str, DeadLetterResolution] = {}
    for record in read_to_end(topic_name(RESOLUTIONS_TOPIC), None, bootstrap):
        if record.value is None:
            continue
        try:
            resolution = decode_as(DeadLetterResolution, record.value)
        except UndecodableRecord:
            continue
        out[resolution["dead_letter_id"]] = resolution
    return out


def with_resolutions(
    letters: Iterable[dict[str, Any]], resolutions: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each letter with its `resolution` (None while unresolved) and whether `retryable`."""
    out = []
    for letter in letters:
        plan = retry_plan(letter)
        resolution = resolutions.get(letter["dead_letter_id"])
        out.append(
            {
                **letter,
                "resolution": dict(resolution) if resolution else None,
                "retryable": plan.action != "none",
                "not_retryable_reason": plan.reason,
            }
        )
    return out


def resolution_record(
    letter: Mapping[str, Any],
    action: DeadLetterAction,
    by: str,
    note: str | None,
    at_ms: int,
    resolution_id: str,
    tenant_id: str | None = None,
    command: Mapping[str, Any] | None = None,
    retry_execution_id: str | None = None,
) -> DeadLetterResolution:
    """Pure: the `DeadLetterResolution` of `letter` (a listed one: `read_dead_letters`)."""
    return {
        "resolution_id": resolution_id,
        "dead_letter_id": letter["dead_letter_id"],
        "event_time": at_ms,
        "action": action,
        "by": by,
        "note": note or None,
        "job_id": letter.get("job_id"),
        "execution_id": letter.get("execution_id"),
        "tenant_id": tenant_id,
        "retry_command_id": None if command is None else command["command_id"],
        "retry_execution_id": retry_execution_id,
    }


def _checked_note(note: str | None, required: bool) -> str | None:
    from tickwheel.errors import InvalidInput

    text = (note or "").strip()
    if required and not text:
        raise InvalidInput("note", "required to discard; accepted: a few words on why")
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput("note", f"{len(text)} characters; accepted: 1-{MAX_NOTE_CHARS}")
    return text or None


class DeadLettersClient:
    """Lists, retries and discards dead letters. `jobs` (default: a `JobsClient` on the same
    cluster) is what a retry triggers through; the API passes its tenant's view of it."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clock: Clock | None = None,
        jobs: JobsLike | None = None,
        tenant_id: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self._clock = clock or SystemClock()
        self._jobs = jobs
        self.tenant_id = tenant_id
        self.topic = topic_name(RESOLUTIONS_TOPIC)

    @property
    def jobs(self) -> JobsLike:
        if self._jobs is None:
            from tickwheel.sdk.jobs import JobsClient

            self._jobs = JobsClient(self.bootstrap, self._clock)
        return self._jobs

    def letters(self, include_resolved: bool = True) -> list[dict[str, Any]]:
        """Every dead letter, oldest first, each with its `resolution` and `retryable`."""
        letters = with_resolutions(
            read_dead_letters(self.bootstrap), read_resolutions(self.bootstrap)
        )
        return [d for d in letters if include_resolved or d["resolution"] is None]

    def retry(
        self,
        dead_letter_id: str,
        *,
        by: str,
        note: str | None = None,
        letters: list[dict[str, Any]] | None = None,
    ) -> DeadLetterResolution:
        """Ask for the letter's work again (see `retry_plan`) and record it as `retried`.
        Raises UnknownDeadLetter, AlreadyResolved, NotRetryable (and UnknownJob's kin from
        the job client). `letters` is a list already read (`letters()`), for a bulk retry."""
        letter = self._unresolved(dead_letter_id, letters)
        text = _checked_note(note, required=False)
        plan = retry_plan(letter)
        if plan.action == "none" or plan.job_id is None:
            raise NotRetryable(dead_letter_id, plan.reason)
        from tickwheel.sdk.jobs import UnknownJob

        try:
            version = int(self.jobs.get(plan.job_id)["version"])
        except UnknownJob:
            raise NotRetryable(
                dead_letter_id, f"its job {plan.job_id!r} no longer exists"
            ) from None
        command = self.jobs.trigger(plan.job_id)
        # The timer names a trigger's execution after the command's instant (decision 0013).
        expected = execution_id_of(plan.job_id, version, int(command["requested_at"]))
        record = resolution_record(
            letter,
            "retried",
            by,
            text,
            self._now_ms(),
            str(uuid.uuid4()),
            self.tenant_id,
            command,
            expected,
        )
        self._send(record)
        return record

    def discard(
        self,
        dead_letter_id: str,
        *,
        by: str,
        note: str,
        letters: list[dict[str, Any]] | None = None,
    ) -> DeadLetterResolution:
        """Record the letter as `discarded` (nothing is re-run); the note is required."""
        text = _checked_note(note, required=True)
        letter = self._unresolved(dead_letter_id, letters)
        record = resolution_record(
            letter, "discarded", by, text, self._now_ms(), str(uuid.uuid4()), self.tenant_id
        )
        self._send(record)
        return record

    def _unresolved(
        self, dead_letter_id: str, letters: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        for letter in letters if letters is not None else self.letters():
            if letter["dead_letter_id"] == dead_letter_id:
                if letter.get("resolution"):
                    raise AlreadyResolved(letter["resolution"])
                return letter
        raise UnknownDeadLetter(dead_letter_id)

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def _send(self, record: DeadLetterResolution) -> None:
        from tickwheel.adapters.kafka.producer import EventProducer

        producer = EventProducer(self.bootstrap)
        producer.send(self.topic, record["dead_letter_id"], encode("DeadLetterResolution", record))
        producer.flush(10.0)


def retry_execution(
    client: DeadLettersClient,
    letters: list[dict[str, Any]],
    execution_id: str,
    job_id: str,
    *,
    by: str,
    note: str | None = None,
) -> dict[str, Any]:
    """A new execution of `job_id` for the finished `execution_id` (decision 0102): through
    the execution's unresolved dead letter if it has one (the letter is then `retried`), else
    a trigger of its job. `letters` are those the caller may act on, with their resolutions
    (`with_resolutions`). Raises InvalidInput for a workflow step's execution (its workflow
    retries it) and AlreadyResolved when its letter was retried or discarded already (what
    it stood for was dealt with; another retry would run it twice). Returns the new
    `execution_id`, the trigger's `command_id`, the `dead_letter_id` gone through (or None)
    and `via` (`dead-letter` or `trigger`)."""
    from tickwheel.errors import InvalidInput

    workflow = step_workflow(job_id)
    if workflow is not None:
        raise InvalidInput(
            "execution",
            f"a step of workflow {workflow!r}; accepted: retry the step on its workflow",
        )
    own = [d for d in letters if d.get("execution_id") == execution_id]
    letter = next((d for d in own if not d.get("resolution")), None)
    if letter is None and own:
        raise AlreadyResolved(own[-1]["resolution"])
    if letter is not None:
        done = client.retry(letter["dead_letter_id"], by=by, note=note, letters=[letter])
        return {
            "execution_id": done["retry_execution_id"],
            "command_id": done["retry_command_id"],
            "dead_letter_id": letter["dead_letter_id"],
            "via": "dead-letter",
        }
    version = int(client.jobs.get(job_id)["version"])
    command = client.jobs.trigger(job_id)
    # The timer names a trigger's execution after the command's instant (decision 0013).
    new_id = execution_id_of(job_id, version, int(command["requested_at"]))
    return {
        "execution_id": new_id,
        "command_id": command["command_id"],
        "dead_letter_id": None,
        "via": "trigger",
    }
