"""`tickwheel.events` builds a whole `ExecutionEvent` from any request mapping, and only with
an event type the schema has."""

from __future__ import annotations

import random
import typing

import pytest

from tests.unit.adapters.avro.schema_samples import REPO_SCHEMAS, sample_value
from tickwheel.adapters.avro import decode_as, load_schemas
from tickwheel.adapters.avro.records_gen import latest_schemas
from tickwheel.events import execution_event, requested_event
from tickwheel.records import ExecutionEvent, ExecutionEventType

REGISTRY = load_schemas(REPO_SCHEMAS)
REQUEST_SCHEMA = next(s for s in latest_schemas(REPO_SCHEMAS) if s["name"] == "ExecutionRequest")


@pytest.mark.parametrize("event_type", typing.get_args(ExecutionEventType))
def test_every_event_type_of_the_schema_builds_a_whole_event(event_type: str) -> None:
    request = sample_value(REQUEST_SCHEMA, random.Random(event_type))
    event = execution_event(request, event_type, event_id="e", event_time_ms=7,
                            details={"why": 1})  # fmt: skip
    assert set(event) == set(typing.get_type_hints(ExecutionEvent))
    assert decode_as(ExecutionEvent, REGISTRY.encode("ExecutionEvent", event), REGISTRY) == event


def test_an_event_type_the_schema_lacks_is_refused() -> None:
    request = sample_value(REQUEST_SCHEMA, random.Random(1))
    with pytest.raises(KeyError):
        execution_event(request, "exploded", event_id="e", event_time_ms=7)


def test_a_requested_event_says_its_trigger_and_lateness() -> None:
    request = {**sample_value(REQUEST_SCHEMA, random.Random(2)), "trigger": "retry", "late": True}
    event = requested_event(request)
    assert event["event_type"] == "requested"
    assert event["reason"] == "retry:late"
    assert event["event_time"] == request["requested_at"]
