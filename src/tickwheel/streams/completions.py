"""An example faust-streaming consumer: react to every succeeded execution and every finished
workflow, once each in its own output, however often Kafka redelivers.

    python -m tickwheel.streams.completions worker --without-web -l warn

It reads `executions.events` and `workflows.events` and writes one JSON record per completion
to `streams.completions` (key = the execution or workflow id). At least once: a record is
redelivered after a crash or a rebalance, so each reaction is keyed — a table (its changelog in
Kafka) remembers which ids were answered, and the output is sent before the id is marked, so a
crash between the two can repeat one output but never lose one (decision 0081). A record that
is not a tickwheel record goes to the dead-letter topic with its position; the agent goes on.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import faust

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.clock import SystemClock
from tickwheel.records import ExecutionEvent, WorkflowEvent
from tickwheel.streams.codec import AVRO_CODEC, Undecodable
from tickwheel.streams.settings import app_settings, topic_names
from tickwheel.topology import load_topology, topic_name

log = logging.getLogger("tickwheel.streams.completions")

# The workflow events that end an instance (core.workflow.state's terminal statuses).
FINISHED = {
    "workflow_succeeded": "succeeded",
    "workflow_failed": "failed",
    "workflow_cancelled": "cancelled",
    "workflow_compensated": "compensated",
}
OUTPUT = "streams.completions"

_names = topic_names()
_partitions = {spec.name: spec.partitions for spec in load_topology()}
_clock = SystemClock()

app = faust.App(topic_name("tickwheel-completions"), **app_settings())
executions = app.topic(
    _names["executions.events"], key_serializer="raw", value_serializer=AVRO_CODEC
)
workflows = app.topic(_names["workflows.events"], key_serializer="raw", value_serializer=AVRO_CODEC)
dead_letters = app.topic(_names["executions.dlq"], key_serializer="raw", value_serializer="raw")
completions = app.topic(
    topic_name(OUTPUT),
    key_serializer="raw",
    value_serializer="json",
    internal=True,  # faust creates it: it is this example's, not tickwheel's topology
    partitions=_partitions[_names["executions.events"]],
)
# A table's changelog is written to the partition of the event being processed, so it has the
# partition count of the topic it follows.
answered_executions = app.Table(
    "answered-executions", default=bool, partitions=_partitions[_names["executions.events"]]
)
answered_workflows = app.Table(
    "answered-workflows", default=bool, partitions=_partitions[_names["workflows.events"]]
)


async def _dead_letter(event: faust.EventT[Any], bad: Undecodable) -> None:
    message = event.message
    key = message.key.decode("utf-8", "replace") if message.key else None
    letter = dead_letter_record(
        message.topic,
        message.partition,
        message.offset,
        key,
        bad.raw,
        bad.reason,
        "undecodable",
        int(_clock.now() * 1000),
    )
    log.error("undecodable record sent to the dead-letter topic: %s", letter["reason"])
    await dead_letters.send(key=(key or "").encode(), value=encode("DeadLetter", letter))


def execution_completion(event: ExecutionEvent) -> dict[str, Any]:
    """The output for a succeeded execution."""
    return {
        "kind": "execution",
        "id": event["execution_id"],
        "job_id": event["job_id"],
        "attempt": event["attempt"],
        "scheduled_time": event["scheduled_time"],
        "completed_at": event["event_time"],
    }


def workflow_completion(event: WorkflowEvent) -> dict[str, Any]:
    """The output for a finished workflow instance."""
    return {
        "kind": "workflow",
        "id": event["workflow_id"],
        "definition_id": event["definition_id"],
        "outcome": FINISHED[event["event_type"]],
        "completed_at": event["event_time"],
    }


@app.agent(executions)
async def on_execution_events(stream: faust.StreamT[Any]) -> AsyncIterator[None]:
    await completions.maybe_declare()  # faust declares only the topics it reads by itself
    async for event in stream.events():
        value = event.value
        if isinstance(value, Undecodable):
            await _dead_letter(event, value)
        elif value["event_type"] == "succeeded" and not answered_executions[value["execution_id"]]:
            key = value["execution_id"]
            await completions.send(key=key.encode(), value=execution_completion(value))
            answered_executions[key] = True
        yield None


@app.agent(workflows)
async def on_workflow_events(stream: faust.StreamT[Any]) -> AsyncIterator[None]:
    await completions.maybe_declare()
    async for event in stream.events():
        value = event.value
        if isinstance(value, Undecodable):
            await _dead_letter(event, value)
        elif value["event_type"] in FINISHED and not answered_workflows[value["workflow_id"]]:
            key = value["workflow_id"]
            await completions.send(key=key.encode(), value=workflow_completion(value))
            answered_workflows[key] = True
        yield None


if __name__ == "__main__":
    app.main()
