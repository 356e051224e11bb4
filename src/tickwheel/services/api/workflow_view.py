"""The API's workflow reads from memory: `workflows.definitions`, `.state` and `.events`
followed by one consumer (decision 0140).

`WorkflowsClient` (the SDK) reads the instance's partitions of `workflows.state` and
`workflows.events` to their end, and the whole definitions topic, on every call: hundreds of
milliseconds a read under load. `FollowedWorkflows` is that client with its three reads
answered from a followed view instead (`TopicFollower`, read through `FreshReads`), fresh by decision 0139's rule (this instance's
own definitions at once, anyone's records within the read window). Its writes are the SDK's.
The view starts at the first read, so an app that never reads a workflow never follows them.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, cast

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.kafka.follower import TopicFollower
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.clock import Clock
from tickwheel.records import WorkflowSnapshot
from tickwheel.sdk.workflows import WorkflowsClient
from tickwheel.services.api.freshness import FreshReads, window_from_env

# Keys the orchestrator writes on workflows.state for itself, not instances.
PARTITION_KEY_PREFIX = "__partition__/"


class WorkflowMemory:
    """What the view holds, filled by the follower: every published definition, each
    instance's latest snapshot (by partition) and every instance's events in topic order.

    Snapshots and events are kept as the bytes that arrived and decoded when first read (then
    kept decoded): the orchestrator writes both at its fold's rate, and an API nobody asks
    about an instance should not spend its CPU decoding it. Every method runs holding the
    view's condition (the follower's handlers, and the reads' `view` callbacks)."""

    def __init__(self) -> None:
        self.definitions: dict[tuple[str, int], dict[str, Any]] = {}
        self.snapshots: dict[int, dict[str, bytes]] = {}
        self.events: dict[str, list[bytes]] = {}
        self._snapshot_values: dict[str, tuple[bytes, dict[str, Any] | None]] = {}
        self._event_values: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    def definition(self, key: str | None, partition: int, value: bytes | None) -> None:
        if value is None:
            return
        try:
            record = decode(value, "WorkflowDefinition")[1]
            document = json.loads(record["body"])
        except (UndecodableRecord, ValueError):
            return  # the orchestrator dead-letters it
        # The first document of a version is the one (the SDK's read keeps the first too).
        self.definitions.setdefault((record["definition_id"], record["version"]), document)

    def snapshot(self, key: str | None, partition: int, value: bytes | None) -> None:
        if key is None or key.startswith(PARTITION_KEY_PREFIX):
            return
        held = self.snapshots.setdefault(partition, {})
        if value is None:
            held.pop(key, None)
            self._snapshot_values.pop(key, None)
            return
        held[key] = value

    def event(self, key: str | None, partition: int, value: bytes | None) -> None:
        if key is not None and value is not None:
            self.events.setdefault(key, []).append(value)

    def snapshot_of(self, partition: int, workflow_id: str) -> dict[str, Any] | None:
        """The instance's latest snapshot, decoded (None: none, or not one we can read)."""
        raw = self.snapshots.get(partition, {}).get(workflow_id)
        if raw is None:
            return None
        known = self._snapshot_values.get(workflow_id)
        if known is not None and known[0] is raw:
            return known[1]
        try:
            value: dict[str, Any] | None = decode(raw, "WorkflowSnapshot")[1]
        except UndecodableRecord:
            value = None  # somebody else's garbage: no instance to answer with
        self._snapshot_values[workflow_id] = (raw, value)
        return value

    def snapshots_in(self, partitions: list[int]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for partition in partitions:
            for workflow_id in self.snapshots.get(partition, {}):
                value = self.snapshot_of(partition, workflow_id)
                if value is not None:
                    found[workflow_id] = value
        return found

    def events_of(self, workflow_id: str) -> list[dict[str, Any]]:
        """The instance's events, oldest first, `data` as JSON; undecodable ones skipped."""
        raw = self.events.get(workflow_id, [])
        seen, decoded = self._event_values.get(workflow_id, (0, []))
        for value in raw[seen:]:
            try:
                event = decode(value, "WorkflowEvent")[1]
                event["data"] = json.loads(event["data"]) if event.get("data") else None
            except (UndecodableRecord, ValueError):
                continue
            decoded.append(event)
        if raw:
            self._event_values[workflow_id] = (len(raw), decoded)
        return list(decoded)


class FollowedWorkflows(WorkflowsClient):
    """`WorkflowsClient` whose reads answer from a followed view of the workflow topics."""

    def __init__(
        self,
        bootstrap: str | None = None,
        clock: Clock | None = None,
        keys: dict[str, bytes] | None = None,
        window_s: float | None = None,
    ) -> None:
        super().__init__(bootstrap, clock, keys)
        self.window_s = window_from_env(dict(os.environ)) if window_s is None else window_s
        self.memory = WorkflowMemory()
        self._view: FreshReads | None = None
        self._opening = threading.Lock()

    def view(self) -> FreshReads:
        with self._opening:
            if self._view is None:
                memory = self.memory
                follower = TopicFollower(
                    {
                        self.definitions_topic: memory.definition,
                        self.state_topic: memory.snapshot,
                        self.events_topic: memory.event,
                    },
                    self.bootstrap,
                    name="api-view",
                )
                self._view = FreshReads(follower, self.window_s)
            return self._view

    def _place(self, topic: str, key: str) -> tuple[str, int]:
        return (topic, partition_for(key, len(self.view().follower.partitions[topic])))

    def _partition(self, workflow_id: str) -> int:
        # The followed partitions, not a question to the cluster per call.
        return self._place(self.state_topic, workflow_id)[1]

    def _publish(self, topic: str, key: str, value: bytes) -> None:
        super()._publish(topic, key, value)
        if topic == self.definitions_topic:  # the one followed topic this client writes
            self.view().wrote(self._place(topic, key))

    def definitions(
        self, definition_id: str | None = None
    ) -> dict[tuple[str, int], dict[str, Any]]:
        view = self.view()

        def found() -> dict[tuple[str, int], dict[str, Any]]:
            return {
                k: d
                for k, d in self.memory.definitions.items()
                if definition_id is None or k[0] == definition_id
            }

        return view.read(view.follower.every(self.definitions_topic), found)

    def _snapshots(self, partition: int | None = None) -> dict[str, WorkflowSnapshot]:
        view = self.view()
        every = view.follower.every(self.state_topic)
        places = every if partition is None else [(self.state_topic, partition)]
        snapshots = view.read(places, lambda: self.memory.snapshots_in([p for _, p in places]))
        return cast("dict[str, WorkflowSnapshot]", snapshots)  # decoded WorkflowSnapshots

    def _snapshot(self, workflow_id: str, partition: int | None = None) -> WorkflowSnapshot | None:
        # The view knows where the instance lives: `partition` is the SDK's shortcut.
        view = self.view()
        place = self._place(self.state_topic, workflow_id)
        snapshot = view.read([place], lambda: self.memory.snapshot_of(place[1], workflow_id))
        return cast("WorkflowSnapshot | None", snapshot)

    def _events(self, workflow_id: str, partition: int | None = None) -> list[dict[str, Any]]:
        view = self.view()
        place = self._place(self.events_topic, workflow_id)
        return view.read([place], lambda: self.memory.events_of(workflow_id))

    def close(self) -> None:
        with self._opening:
            if self._view is not None:
                self._view.follower.close()
                self._view = None
