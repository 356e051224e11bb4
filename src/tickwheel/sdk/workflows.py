"""Workflows from a producer's and an operator's side: publish definitions, start instances,
read their timelines, cancel, repair, approve (docs/workflows.md, decision 0061).

    from tickwheel.sdk.workflows import WorkflowsClient
    flows = WorkflowsClient()
    flows.define(json.load(open("video_publish.json")))
    workflow_id = flows.start("video_publish", {"url": "s3://..."})
    flows.get(workflow_id).status

Every write is a record: a definition version on `workflows.definitions` (checked by the
core, and against the previous version with `check_compatible`), everything else an input
on `workflows.inputs` that the orchestrator owning the instance folds. Operator inputs carry
the actor, so the timeline says who did what. Approvals need a token signed with a key of
`TICKWHEEL_APPROVAL_KEYS` (`kid:secret,...`, the first signs): signed, expiring, naming one
round; the fold makes it single-use.

Starting is cheap for the caller (issue 33): the client keeps the published definitions it
has read, reading only what was published since (a definition version is immutable), and
reads again when what it knows is older than `definitions_window_s` or lacks the definition
asked; each start waits for its own record's acknowledgement, not for a flush of everything
in flight. `start_many` sends a batch and waits for the batch; `start_async` awaits the
acknowledgement on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as, encode
from tickwheel.adapters.kafka.config import recorded_stack_bootstrap
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import (
    Record,
    TopicTail,
    partition_count,
    read_back,
    read_to_end,
)
from tickwheel.clock import Clock, SystemClock
from tickwheel.core.codeflow import HistoryEvent
from tickwheel.core.codeflow.definition import CODE_KIND
from tickwheel.core.codeflow.kind import histories_from_events
from tickwheel.core.codeflow.timeline import code_steps
from tickwheel.core.workflow import (
    TERMINAL,
    Approve,
    Cancel,
    CompleteStep,
    Event,
    Input,
    Reassign,
    Reject,
    RetryStep,
    SkipStep,
    Start,
    WorkflowDefinition,
    check_compatible,
    evolve,
    initial_state,
    parse_definition,
)
from tickwheel.core.workflow.approval import ApprovalClaim, sign_approval, verify_approval
from tickwheel.core.workflow.inputs import Signal
from tickwheel.core.workflow.kinds import parse_workflow_definition
from tickwheel.core.workflow.snapshot import state_from_json
from tickwheel.core.workflow.wire import input_record
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.paths import stack_approval_keys_file
from tickwheel.records import WorkflowDefinition as DefinitionRecord  # core's is the parsed one
from tickwheel.records import WorkflowEvent, WorkflowSnapshot
from tickwheel.sdk.acked_sends import AckedSends
from tickwheel.topology import topic_name

DEFAULT_APPROVAL_TTL_MS = 72 * 3_600_000
# How long a start trusts the definitions it read: a version published by someone else is
# started by default (`version=None`) from at most this long after it was published.
DEFINITIONS_WINDOW_S = 1.0
SEND_TIMEOUT_S = 30.0


class UnknownWorkflow(TickwheelError, LookupError):
    """No instance (or no definition) has this id yet (`name` says which)."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(f"no workflow {what} {name!r}")
        self.name = name


class IncompatibleDefinition(TickwheelError, ValueError):
    """A new version that may not follow the previous one; `reasons` lists why."""

    def __init__(self, definition_id: str, version: int, reasons: list[str]) -> None:
        super().__init__(
            f"{definition_id} v{version} may not follow the previous version: "
            + "; ".join(reasons)
            + " (publish it under a new definitionId instead)"
        )
        self.reasons = reasons


@dataclass
class WorkflowTimeline:
    """An instance as its history tells it: status, each step's state, and every event."""

    workflow_id: str
    definition_id: str
    definition_version: int
    status: str
    steps: dict[str, dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "workflowId": self.workflow_id,
            "definitionId": self.definition_id,
            "definitionVersion": self.definition_version,
            "status": self.status,
            "steps": self.steps,
            "events": self.events,
        }


def _local_stack_keys() -> str:
    """The approval key the running local stack made (`tickwheel stack up`), if one runs."""
    if recorded_stack_bootstrap() is None:
        return ""
    try:
        return stack_approval_keys_file().read_text().strip()
    except OSError:
        return ""


def approval_keys(text: str | None = None) -> dict[str, bytes]:
    """`kid:secret,...` (default TICKWHEEL_APPROVAL_KEYS, else the running local stack's own
    key) as a key map, in order."""
    if text is None:
        text = os.environ.get("TICKWHEEL_APPROVAL_KEYS", "") or _local_stack_keys()
    keys: dict[str, bytes] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        kid, sep, secret = part.partition(":")
        if not sep or not kid or not secret:
            raise InvalidInput("TICKWHEEL_APPROVAL_KEYS", "accepted: kid:secret[,kid:secret...]")
        keys[kid] = secret.encode()
    return keys


class WorkflowsClient:
    """Definitions, instances and operator actions on the cluster at KAFKA_BOOTSTRAP_SERVERS."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clock: Clock | None = None,
        keys: Mapping[str, bytes] | None = None,
        definitions_window_s: float = DEFINITIONS_WINDOW_S,
    ) -> None:
        self.bootstrap = bootstrap
        self.clock = clock or SystemClock()
        self.keys = dict(keys) if keys is not None else None
        self.definitions_window_s = definitions_window_s
        self.definitions_topic = topic_name("workflows.definitions")
        self.inputs_topic = topic_name("workflows.inputs")
        self.state_topic = topic_name("workflows.state")
        self.events_topic = topic_name("workflows.events")
        self._producer: EventProducer | None = None
        self._acks: AckedSends | None = None
        # Every published version read so far, the reader that goes on from where it stopped,
        # and when it last read (monotonic).
        self._known: dict[tuple[str, int], dict[str, Any]] = {}
        self._definitions_tail = TopicTail(self.definitions_topic, bootstrap)
        self._known_at: float | None = None
        self._lock = threading.Lock()

    def _now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def _writer(self) -> EventProducer:
        with self._lock:
            if self._producer is None:
                # A caller waits for each start: sent at once, not after the 5 ms linger that
                # lets a busy producer fill a batch (records queued together still share one).
                self._producer = EventProducer(self.bootstrap, **{"linger.ms": 0})
            return self._producer

    def _publish(self, topic: str, key: str, value: bytes) -> None:
        # Its own acknowledgement only: a flush would wait for other threads' records too.
        self._writer().deliver(topic, key, value)

    def close(self) -> None:
        if self._acks is not None:
            self._acks.close()
        if self._producer is not None:
            self._producer.flush(5.0)

    def _keys(self) -> dict[str, bytes]:
        keys = self.keys if self.keys is not None else approval_keys()
        if not keys:
            raise InvalidInput("TICKWHEEL_APPROVAL_KEYS", "not set; accepted: kid:secret,...")
        return keys

    # -- definitions ---------------------------------------------------------------------
    def definitions(
        self, definition_id: str | None = None
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """Every published version (of `definition_id`, if given): (id, version) → document,
        read to the topic's end now."""
        self._read_definitions()
        return {
            key: document
            for key, document in self._known.items()
            if definition_id is None or key[0] == definition_id
        }

    def _read_definitions(self) -> None:
        """What was published since the last read (the whole topic the first time)."""
        with self._lock:
            for record in self._definitions_tail.read():
                if record.value is None:
                    continue
                try:
                    value = decode_as(DefinitionRecord, record.value)
                except UndecodableRecord:
                    continue  # the orchestrator dead-letters it
                key = (value["definition_id"], value["version"])
                self._known.setdefault(key, json.loads(value["body"]))  # the first one wins
            # A duration, not an instant: the monotonic counter is no clock reading to inject.
            self._known_at = time.monotonic()

    def _versions(self, definition_id: str, version: int | None) -> list[int]:
        """The published versions of `definition_id`, from what was read within the window
        when that holds what is asked, else read again."""
        fresh = (
            self._known_at is not None
            and time.monotonic() - self._known_at < self.definitions_window_s
        )
        if fresh:
            versions = sorted(v for (d, v) in self._known if d == definition_id)
            if versions and (version is None or version in versions):
                return versions
        known = self.definitions(definition_id)  # a subclass may read them its own way
        with self._lock:
            for key, document in known.items():
                self._known.setdefault(key, document)
            self._known_at = time.monotonic()
        return sorted(v for (_, v) in known)

    def define(self, document: dict[str, Any], *, actor: str | None = None) -> dict[str, Any]:
        """Publish a definition version. Raises InvalidInput (naming the field), or
        IncompatibleDefinition when it may not follow the previous version. Publishing the
        very same document again is a no-op; a different one under a published version is
        refused (versions are immutable)."""
        definition = parse_workflow_definition(document)
        did, version = definition.definition_id, definition.version
        known = self.definitions(did)
        if (did, version) in known:
            if known[(did, version)] == document:
                return {"definitionId": did, "version": version, "published": False}
            raise InvalidInput(
                "version",
                f"{did} v{version} is published already and immutable; accepted: a new version",
            )
        earlier = sorted(v for (_, v) in known if v < version)
        # A DAG's next version must keep its running steps; a code workflow's new code is
        # judged by the deploy gate, against its instances' histories (decision 0217).
        if earlier and isinstance(definition, WorkflowDefinition):
            old = parse_definition(known[(did, earlier[-1])])
            reasons = check_compatible(old, definition, self._live_steps(did, earlier[-1]))
            if reasons:
                raise IncompatibleDefinition(did, version, reasons)
        record: DefinitionRecord = {
            "definition_id": did,
            "version": version,
            "body": json.dumps(document),
            "published_at": self._now_ms(),
            "published_by": actor,
        }
        self._publish(
            self.definitions_topic, f"{did}/{version}", encode("WorkflowDefinition", record)
        )
        with self._lock:
            self._known.setdefault((did, version), document)  # its own write, seen at once
        return {"definitionId": did, "version": version, "published": True}

    def _live_steps(self, definition_id: str, version: int) -> set[str]:
        """Steps that running instances of the version are in (started, not ended)."""
        live: set[str] = set()
        for snapshot in self._snapshots().values():
            if (snapshot["definition_id"], snapshot["definition_version"]) != (
                definition_id,
                version,
            ):
                continue
            if snapshot["status"] in TERMINAL:
                continue
            state = state_from_json(json.loads(snapshot["state"] or "{}"))
            live |= {
                k
                for k, s in state.steps.items()
                if s.status in ("running", "waiting", "cancelling")
            }
        return live

    # -- instances -----------------------------------------------------------------------
    def start(
        self,
        definition_id: str,
        input: Any = None,
        *,
        workflow_id: str | None = None,
        version: int | None = None,
    ) -> str:
        """Start an instance of `definition_id` (its latest version, or `version`) with the
        JSON `input`; returns its id once the broker acknowledged the start. Starting an id
        that exists is recorded and ignored."""
        workflow_id, value = self._start_record(definition_id, input, workflow_id, version)
        self._publish(self.inputs_topic, workflow_id, value)
        return workflow_id

    def start_many(
        self,
        definition_id: str,
        inputs: Iterable[Any],
        *,
        version: int | None = None,
        workflow_ids: Iterable[str] | None = None,
    ) -> list[str]:
        """Start one instance per input (ids from `workflow_ids`, else new ones): every start
        checked before any is sent, then all sent at once and acknowledged together. Returns
        the ids in the inputs' order; raises ProduceFailed if any was not acknowledged (a
        start sent twice is ignored, so sending the batch again is safe)."""
        inputs = list(inputs)
        ids: list[str | None] = list(workflow_ids) if workflow_ids is not None else []
        if ids and len(ids) != len(inputs):
            raise InvalidInput("workflow_ids", f"{len(ids)} ids for {len(inputs)} inputs")
        starts = [
            self._start_record(definition_id, item, ids[n] if ids else None, version)
            for n, item in enumerate(inputs)
        ]
        self._writer().deliver_all(self.inputs_topic, starts, SEND_TIMEOUT_S)
        return [workflow_id for workflow_id, _value in starts]

    async def start_async(
        self,
        definition_id: str,
        input: Any = None,
        *,
        workflow_id: str | None = None,
        version: int | None = None,
    ) -> str:
        """`start`, awaiting the acknowledgement on the caller's event loop (no thread parked
        per start). The definitions are read on a worker thread when they must be."""
        started, value = await asyncio.to_thread(
            self._start_record, definition_id, input, workflow_id, version
        )
        loop = asyncio.get_running_loop()
        acknowledged: asyncio.Future[None] = loop.create_future()
        producer = self._writer()
        with self._lock:
            if self._acks is None:
                self._acks = AckedSends(producer)
            acks = self._acks
        acks.send(self.inputs_topic, started, value, loop, acknowledged)
        await asyncio.wait_for(acknowledged, SEND_TIMEOUT_S)
        return started

    def _start_record(
        self,
        definition_id: str,
        input: Any,
        workflow_id: str | None,
        version: int | None,
    ) -> tuple[str, bytes]:
        """A start checked: the instance's id and its `workflows.inputs` record."""
        versions = self._versions(definition_id, version)
        if not versions or (version is not None and version not in versions):
            raise UnknownWorkflow("definition", f"{definition_id} v{version or 'any'}")
        try:
            json.dumps(input)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("input", f"not JSON data ({exc})") from exc
        workflow_id = workflow_id or f"wf-{uuid.uuid4()}"
        if not workflow_id.strip() or len(workflow_id) > 200:
            raise InvalidInput("workflow_id", "accepted: 1 to 200 characters")
        record = input_record(
            workflow_id,
            Start(self._now_ms(), input),
            f"sdk:{uuid.uuid4()}",
            definition_id=definition_id,
            definition_version=version or versions[-1],
        )
        return workflow_id, encode("WorkflowInput", record)

    def _send(self, workflow_id: str, item: Input, **start: Any) -> None:
        record = input_record(workflow_id, item, f"sdk:{uuid.uuid4()}", **start)
        self._publish(self.inputs_topic, workflow_id, encode("WorkflowInput", record))

    def cancel(self, workflow_id: str, *, actor: str, reason: str = "") -> None:
        self._send(workflow_id, Cancel(self._now_ms(), actor, reason))

    def signal(
        self, workflow_id: str, name: str, payload: Any = None, *, signal_id: str | None = None
    ) -> str:
        """Send signal `name` to a workflow written as code (`ctx.wait_signal`). One sent
        before the instance waits for it is kept for the wait; sending the same `signal_id`
        again (a retried call) delivers it once. Returns the signal id."""
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise InvalidInput("name", "accepted: 1 to 200 characters")
        try:
            json.dumps(payload)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("payload", f"not JSON data ({exc})") from exc
        signal_id = signal_id or f"sig-{uuid.uuid4()}"
        self._send(workflow_id, Signal(self._now_ms(), name, signal_id, payload))
        return signal_id

    def retry_step(self, workflow_id: str, step: str, *, actor: str) -> None:
        """The step's next attempt, same execution id (reopens a failed instance)."""
        self._send(workflow_id, RetryStep(self._now_ms(), step, actor))

    def complete_step(self, workflow_id: str, step: str, output: Any = None, *, actor: str) -> None:
        self._send(workflow_id, CompleteStep(self._now_ms(), step, actor, output))

    def skip_step(self, workflow_id: str, step: str, *, actor: str) -> None:
        self._send(workflow_id, SkipStep(self._now_ms(), step, actor))

    # -- approvals -----------------------------------------------------------------------
    def reassign(self, workflow_id: str, step: str, assignees: list[str], *, actor: str) -> None:
        """Hand a waiting approval to `assignees`: a new round; the old round's tokens are
        fenced from then on."""
        if not assignees or not all(isinstance(a, str) and a.strip() for a in assignees):
            raise InvalidInput("assignees", "accepted: one or more non-empty names")
        self._send(workflow_id, Reassign(self._now_ms(), step, actor, tuple(assignees)))

    def approval_token(self, workflow_id: str, step: str, ttl_ms: int | None = None) -> str:
        """A token for the current round of approval `step` (for the notifier, or an
        operator handing out the link), signed with the first key. It expires after `ttl_ms`
        (default 72 h), and never after its round times out."""
        state = self._state(workflow_id)
        st = state.steps.get(step)
        if st is None or st.status != "waiting" or st.round < 1:
            raise InvalidInput("step", f"{step!r} is not an approval waiting for a decision")
        kid, secret = next(iter(self._keys().items()))
        expires = self._now_ms() + (ttl_ms or DEFAULT_APPROVAL_TTL_MS)
        round_ends = self._round_expiry(workflow_id, step, st.round)
        if round_ends is not None:
            expires = min(expires, round_ends)
        return sign_approval(ApprovalClaim(workflow_id, step, st.round, expires), kid, secret)

    def _round_expiry(self, workflow_id: str, step: str, round_: int) -> int | None:
        for event in self._events(workflow_id):
            data = event["data"] or {}
            if (event["event_type"], event["step_id"], data.get("round")) == (
                "approval_requested",
                step,
                round_,
            ):
                expires = data.get("expires_at_ms")
                return None if expires is None else int(expires)
        return None

    def approve(self, token: str, *, actor: str, note: str = "") -> ApprovalClaim:
        claim = verify_approval(token, self._keys(), self._now_ms())
        self._send(claim.workflow_id, Approve(self._now_ms(), claim.step, claim.round, actor, note))
        return claim

    def reject(self, token: str, *, actor: str, note: str = "") -> ApprovalClaim:
        claim = verify_approval(token, self._keys(), self._now_ms())
        self._send(claim.workflow_id, Reject(self._now_ms(), claim.step, claim.round, actor, note))
        return claim

    # -- reads ---------------------------------------------------------------------------
    def _partition(self, workflow_id: str) -> int:
        # The cluster's count, not the file's: a resize grows it (decision 0211).
        return partition_for(workflow_id, partition_count(self.state_topic, self.bootstrap))

    def _snapshots(self, partition: int | None = None) -> dict[str, WorkflowSnapshot]:
        found: dict[str, WorkflowSnapshot] = {}
        parts = None if partition is None else [partition]
        for record in read_to_end(self.state_topic, parts, self.bootstrap):
            if record.key is None or record.key.startswith("__partition__/"):
                continue
            if record.value is None:
                found.pop(record.key, None)
                continue
            try:
                found[record.key] = decode_as(WorkflowSnapshot, record.value)
            except UndecodableRecord:
                continue
        return found

    def _snapshot(self, workflow_id: str, partition: int | None = None) -> WorkflowSnapshot | None:
        """The instance's latest snapshot (None: there is none): its partition read back from
        the end until a record of the instance is found (the last one is the latest), so
        one instance costs what was written since its last change, not the whole partition
        (compaction keeps the latest snapshot per instance, lazily)."""

        def found(records: list[Record]) -> bool:
            return any(r.key == workflow_id for r in records)

        if partition is None:
            partition = self._partition(workflow_id)
        records = read_back(self.state_topic, partition, found, self.bootstrap)
        for record in reversed([r for r in records if r.key == workflow_id]):
            if record.value is None:
                return None  # pruned (decision 0095)
            try:
                return decode_as(WorkflowSnapshot, record.value)
            except UndecodableRecord:
                continue  # as a full read would: the one before it stands
        return None

    def _state(self, workflow_id: str) -> Any:
        return self._state_of(workflow_id, self._snapshot(workflow_id))

    def _state_of(self, workflow_id: str, snapshot: WorkflowSnapshot | None) -> Any:
        """A DAG instance's state, from its snapshot."""
        if snapshot is None:
            raise UnknownWorkflow("instance", workflow_id)
        data = json.loads(snapshot["state"] or "{}")
        if data.get("kind") == CODE_KIND:
            # Its state is its history, not steps a DAG declares (decision 0217).
            raise InvalidInput(
                "workflow_id", f"{workflow_id} is a workflow written as code; accepted: a DAG's"
            )
        return state_from_json(data)

    def get(self, workflow_id: str) -> WorkflowTimeline:
        """The instance's timeline: its state now and every event, oldest first. An instance
        the orchestrator pruned after its retention (decision 0095) has no snapshot left: its
        state is folded from its events, which stay on workflows.events. A workflow written
        as code is told by its steps, sleeps and waits as its events record them."""
        # Events and snapshots are co-partitioned: the cluster's count is asked once.
        partition = self._partition(workflow_id)
        events = self._events(workflow_id, partition)
        snapshot = self._snapshot(workflow_id, partition)
        if snapshot is not None:
            did, version = snapshot["definition_id"], snapshot["definition_version"]
            data = json.loads(snapshot["state"] or "{}")
            if data.get("kind") == CODE_KIND:
                steps = code_steps(events)
                return WorkflowTimeline(
                    workflow_id, did, version, snapshot["status"], steps, events
                )
            state = self._state_of(workflow_id, snapshot)
        else:
            if not events:
                raise UnknownWorkflow("instance", workflow_id)
            did, version = events[0]["definition_id"], events[0]["definition_version"]
            document = self.definitions(did).get((did, version))
            if document is None:
                raise UnknownWorkflow("definition", f"{did} v{version}")
            if document.get("kind") == CODE_KIND:
                status = events[-1]["status"]
                return WorkflowTimeline(
                    workflow_id, did, version, status, code_steps(events), events
                )
            state = initial_state(workflow_id, parse_definition(document))
            for event in sorted(events, key=lambda e: e["seq"]):
                state = evolve(state, _as_event(event))
        steps = {
            k: {
                "status": s.status,
                "attempt": s.attempt,
                "round": s.round,
                "startedAt": s.started_at_ms,
                "endedAt": s.ended_at_ms,
                "compensation": s.comp_status or None,
                "output": s.output,
            }
            for k, s in state.steps.items()
        }
        return WorkflowTimeline(
            workflow_id, state.definition_id, state.definition_version, state.status, steps, events
        )

    def _events(self, workflow_id: str, partition: int | None = None) -> list[dict[str, Any]]:
        """The instance's events, oldest first, `data` as JSON: read back from the end of its
        partition until its first event (seq 1) is found, so one instance costs what was
        written since it began, not the partition's whole history."""

        def begun(records: list[Record]) -> bool:
            mine = self._decode_events(r for r in records if r.key == workflow_id)
            return any(e["seq"] == 1 for e in mine.get(workflow_id, []))

        if partition is None:
            partition = self._partition(workflow_id)
        records = read_back(self.events_topic, partition, begun, self.bootstrap)
        events = self._decode_events(r for r in records if r.key == workflow_id).get(
            workflow_id, []
        )
        # An id used again after its instance was pruned: the latest instance's events only.
        firsts = [i for i, event in enumerate(events) if event["seq"] == 1]
        return events[firsts[-1] :] if firsts else events

    def _read_events(self, partitions: list[int] | None) -> dict[str, list[dict[str, Any]]]:
        """Every event on `partitions` (None: all) by instance, oldest first, `data` as JSON
        (a reader's view, not the record)."""
        return self._decode_events(read_to_end(self.events_topic, partitions, self.bootstrap))

    @staticmethod
    def _decode_events(records: Iterable[Record]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            if record.key is None or record.value is None:
                continue
            try:
                decoded: WorkflowEvent = decode_as(WorkflowEvent, record.value)
            except UndecodableRecord:
                continue
            event: dict[str, Any] = dict(decoded)
            event["data"] = json.loads(decoded["data"]) if decoded["data"] else None
            found.setdefault(record.key, []).append(event)
        return found

    def code_histories(self, finished: int = 20) -> list[tuple[str, str, list[HistoryEvent]]]:
        """`(workflow id, status, the current run's history)` of every open instance of a
        workflow written as code, and of the `finished` ones that ended last: what the deploy
        gate replays against new code (`tickwheel workflows check`)."""
        code = {k for k, d in self.definitions().items() if d.get("kind") == CODE_KIND}
        statuses = {k: s["status"] for k, s in self._snapshots().items()}
        still_open, ended = [], []
        for workflow_id, events in sorted(self._read_events(None).items()):
            first = events[0]
            if (first["definition_id"], first["definition_version"]) not in code:
                continue
            status = statuses.get(workflow_id) or events[-1]["status"] or "running"
            runs = histories_from_events(_as_event(view) for view in events)
            found = (workflow_id, status, runs[-1] if runs else [])
            if status in TERMINAL:
                ended.append((events[-1]["event_time"], found))
            else:
                still_open.append(found)
        ended.sort(key=lambda pair: pair[0])
        last = ended[-finished:] if finished > 0 else []
        return still_open + [found for _, found in last]

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        """Every instance's summary (of one `status`, if given), by id."""
        rows = [
            {
                "workflowId": k,
                "definitionId": s["definition_id"],
                "definitionVersion": s["definition_version"],
                "status": s["status"],
                "seq": s["seq"],
                "updatedAt": s["updated_at"],
            }
            for k, s in self._snapshots().items()
            if status is None or s["status"] == status
        ]
        return sorted(rows, key=lambda r: r["workflowId"])


def _as_event(view: Mapping[str, Any]) -> Event:
    """A recorded event as the fold's `Event`, from its reader's view (`data` parsed)."""
    return Event(
        view["seq"],
        view["event_type"],
        view["event_time"],
        view["step_id"],
        view["attempt"],
        view["actor"],
        view["data"] or {},
    )
