"""Every published workflow definition version, as the orchestrator knows them: read from
`workflows.definitions` (compacted, one record per version, key `<definitionId>/<version>`).

An instance is pinned to its version, so every version is kept. A record that is not a
valid definition is dead-lettered with the reason and skipped; the first record of a
version wins (a version is immutable: a later record under the same key is a mistake).
"""

from __future__ import annotations

import json
import logging
import threading

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.reader import TopicTail
from tickwheel.core.codeflow.definition import CodeWorkflowDefinition
from tickwheel.core.workflow import WorkflowDefinition
from tickwheel.core.workflow.kinds import parse_workflow_definition
from tickwheel.records import WorkflowDefinition as DefinitionRecord  # the parsed one is core's
from tickwheel.topology import topic_name

log = logging.getLogger("tickwheel.orchestrator")


def definition_key(definition_id: str, version: int) -> str:
    return f"{definition_id}/{version}"


class DefinitionCatalog:
    """Thread-safe: the restore thread and the loop both refresh it."""

    def __init__(self, bootstrap: str, dead_letters: DeadLetterWriter | None = None) -> None:
        self.bootstrap = bootstrap
        self.topic = topic_name("workflows.definitions")
        self._versions: dict[tuple[str, int], WorkflowDefinition | CodeWorkflowDefinition] = {}
        self._latest: dict[str, int] = {}
        self._tenants: dict[tuple[str, int], str | None] = {}
        self._tail = TopicTail(self.topic, bootstrap)
        self._lock = threading.Lock()
        self._dead_letters = dead_letters or DeadLetterWriter(bootstrap)

    def __len__(self) -> int:
        return len(self._versions)

    def get(
        self, definition_id: str, version: int | None
    ) -> WorkflowDefinition | CodeWorkflowDefinition | None:
        """Version `version` of `definition_id` (None: the latest known)."""
        if version is None:
            version = self._latest.get(definition_id)
            if version is None:
                return None
        return self._versions.get((definition_id, version))

    def tenant_of(self, definition: WorkflowDefinition | CodeWorkflowDefinition) -> str | None:
        """The `tenantId` the definition's document names, if any."""
        return self._tenants.get((definition.definition_id, definition.version))

    def refresh(self) -> int:
        """Read what was published since the last refresh; returns how many versions came."""
        with self._lock:
            added = 0
            for record in self._tail.read():
                if record.value is None:
                    continue
                try:
                    added += self._add(decode_as(DefinitionRecord, record.value))
                except (UndecodableRecord, ValueError) as exc:
                    reason = getattr(exc, "reason", None) or str(exc)
                    self._dead_letters.undecodable(
                        record.topic,
                        record.partition,
                        record.offset,
                        record.key,
                        record.value,
                        reason,
                        "undecodable" if isinstance(exc, UndecodableRecord) else "rejected",
                    )
            return added

    def add(self, record: DefinitionRecord) -> int:
        """A `WorkflowDefinition` record (tests and the restore read it this way)."""
        with self._lock:
            return self._add(record)

    def _add(self, record: DefinitionRecord) -> int:
        key = (record["definition_id"], int(record["version"]))
        if key in self._versions:
            return 0
        body = json.loads(record["body"])
        definition = parse_workflow_definition(body)
        if (definition.definition_id, definition.version) != key:
            raise ValueError(
                f"the body is {definition.definition_id} v{definition.version}, "
                f"the record says {key[0]} v{key[1]}"
            )
        self._versions[key] = definition
        tenant = body.get("tenantId") if isinstance(body, dict) else None
        self._tenants[key] = tenant if isinstance(tenant, str) else None
        if key[1] > self._latest.get(key[0], 0):
            self._latest[key[0]] = key[1]
        log.info(
            "definition known",
            extra={"action": "definition_loaded", "definition_id": key[0], "version": key[1]},
        )
        return 1
