"""The codec's typed boundary: `decode_as(RecordType, data)` returns that record or refuses.

Invariants: the type names the record (every generated top-level type is its schema's name);
bytes of that record come back equal to what was encoded, in the type's keys; bytes of any
other record, or not a record at all, raise `UndecodableRecord` naming both records.
"""

from __future__ import annotations

import random
import typing

import pytest

from tests.unit.adapters.avro.schema_samples import REPO_SCHEMAS, sample_value
from tickwheel import records
from tickwheel.adapters.avro import (
    UndecodableRecord,
    decode_as,
    load_schemas,
    record_name,
)
from tickwheel.adapters.avro.records_gen import latest_schemas
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.records import Alert, DeadLetter, TimerState


def test_every_generated_record_type_names_its_schema() -> None:
    for schema in latest_schemas(REPO_SCHEMAS):
        assert record_name(getattr(records, schema["name"])) == schema["name"]


def test_decode_as_round_trips_a_typed_record_through_encode() -> None:
    registry = load_schemas(REPO_SCHEMAS)
    letter = dead_letter_record("t", 0, 7, "job", b"raw", "bad", "undecodable", 1)
    typed: DeadLetter = decode_as(DeadLetter, registry.encode("DeadLetter", letter), registry)
    assert typed == letter
    assert list(typed) == list(typing.get_type_hints(DeadLetter))


@pytest.mark.parametrize("schema", latest_schemas(REPO_SCHEMAS), ids=lambda s: s["name"])
def test_decode_as_reads_every_record_back_as_its_type(schema: dict[str, typing.Any]) -> None:
    registry = load_schemas(REPO_SCHEMAS)
    name = schema["name"]
    value = sample_value(schema, random.Random(name))
    decoded = decode_as(getattr(records, name), registry.encode(name, value), registry)
    assert decoded == value
    assert list(decoded) == list(typing.get_type_hints(getattr(records, name)))


def test_bytes_of_another_record_are_refused_naming_both() -> None:
    registry = load_schemas(REPO_SCHEMAS)
    alert_schema = next(s for s in latest_schemas(REPO_SCHEMAS) if s["name"] == "Alert")
    data = registry.encode("Alert", sample_value(alert_schema, random.Random(1)))
    assert decode_as(Alert, data, registry)["alert_id"]
    with pytest.raises(UndecodableRecord, match="expected TimerState got Alert"):
        decode_as(TimerState, data, registry)


def test_bytes_that_are_no_record_are_refused() -> None:
    with pytest.raises(UndecodableRecord, match="not single-object encoded"):
        decode_as(TimerState, b"{}")
