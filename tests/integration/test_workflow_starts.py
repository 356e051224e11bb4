"""Starting instances is cheap for the caller and still exact (issue 33): on the real broker,
every start — one by one, in a batch, awaited on an event loop — is on `workflows.inputs`
once, pinned to the version it was given or the latest the client knew; a version another
client publishes is started by default once the client's window has passed; a definition
nobody published is refused however fresh the client's view."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tickwheel.adapters.avro import decode_as
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.records import WorkflowInput
from tickwheel.sdk.workflows import UnknownWorkflow, WorkflowsClient
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration


def _definition(definition_id: str, version: int) -> dict[str, Any]:
    return {
        "definitionId": definition_id,
        "version": version,
        "steps": [{"id": "only", "type": "noop", "dependsOn": []}],
    }


def _starts(bootstrap: str) -> dict[str, list[WorkflowInput]]:
    """Every start on workflows.inputs, by instance id."""
    found: dict[str, list[WorkflowInput]] = {}
    for record in read_to_end(topic_name("workflows.inputs"), None, bootstrap):
        if record.value is None:
            continue
        value = decode_as(WorkflowInput, record.value)
        if value["kind"] == "start":
            found.setdefault(value["workflow_id"], []).append(value)
    return found


def test_starts_one_by_one_in_a_batch_and_awaited_are_each_written_once(
    applied_topology: str, kafka_bootstrap: str
) -> None:
    client = WorkflowsClient(kafka_bootstrap)
    try:
        client.define(_definition("starts", 1))
        one_by_one = [client.start("starts", {"n": n}) for n in range(100)]
        batch = client.start_many("starts", [{"n": n} for n in range(300)])
        named = client.start_many(
            "starts", [{"n": 0}, {"n": 1}], workflow_ids=["named-a", "named-b"], version=1
        )

        async def awaited() -> list[str]:
            return list(
                await asyncio.gather(*(client.start_async("starts", {"n": n}) for n in range(50)))
            )

        concurrent = asyncio.run(awaited())
    finally:
        client.close()
    assert named == ["named-a", "named-b"]
    started = [*one_by_one, *batch, *named, *concurrent]
    assert len(set(started)) == len(started) == 452
    starts = _starts(kafka_bootstrap)
    for workflow_id in started:
        [record] = starts[workflow_id]  # written once, acknowledged before the call returned
        assert (record["definition_id"], record["definition_version"]) == ("starts", 1)


def test_a_version_published_elsewhere_is_started_once_the_window_has_passed(
    applied_topology: str, kafka_bootstrap: str
) -> None:
    trusting = WorkflowsClient(kafka_bootstrap, definitions_window_s=3600.0)
    asking = WorkflowsClient(kafka_bootstrap, definitions_window_s=0.0)
    publisher = WorkflowsClient(kafka_bootstrap)
    try:
        publisher.define(_definition("versions", 1))
        before = [trusting.start("versions"), asking.start("versions")]
        publisher.define(_definition("versions", 2))
        # Within its window the trusting client starts what it knew; asked for v2 by name,
        # it reads again rather than refuse a version it has not seen.
        stale = trusting.start("versions")
        named = trusting.start("versions", version=2)
        fresh = asking.start("versions")
        with pytest.raises(UnknownWorkflow):
            trusting.start("nobody-published-this")
        with pytest.raises(UnknownWorkflow):
            trusting.start("versions", version=3)
    finally:
        for client in (trusting, asking, publisher):
            client.close()
    starts = _starts(kafka_bootstrap)
    versions = {w: starts[w][0]["definition_version"] for w in [*before, stale, named, fresh]}
    assert [versions[w] for w in before] == [1, 1]
    assert (versions[stale], versions[named], versions[fresh]) == (1, 2, 2)
