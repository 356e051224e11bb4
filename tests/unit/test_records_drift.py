"""`tickwheel.records` is generated from `schemas/`: a schema and its type never drift."""

from __future__ import annotations

import typing

from tickwheel import records
from tickwheel.adapters.avro import default_registry, encode
from tickwheel.adapters.avro._registry import find_schemas_dir
from tickwheel.adapters.avro.records_gen import generate, latest_schemas, target_path
from tickwheel.adapters.kafka.dead_letters import dead_letter_record


def test_the_checked_in_types_are_what_the_generator_writes_for_todays_schemas() -> None:
    assert target_path().read_text() == generate(), (
        "src/tickwheel/records.py has drifted from schemas/: "
        "run python -m tickwheel.adapters.avro.records_gen"
    )


def test_every_record_has_a_type_whose_keys_are_its_latest_fields() -> None:
    for schema in latest_schemas(find_schemas_dir()):
        record_type = getattr(records, schema["name"])
        fields = [field["name"] for field in schema["fields"]]
        assert list(typing.get_type_hints(record_type)) == fields


def test_a_decoded_record_has_exactly_its_types_keys() -> None:
    """The type describes what `decode` returns: every key present, no other."""
    letter = dead_letter_record("t", 0, 7, "job", b"raw", "bad", "undecodable", 1)
    _, decoded = default_registry().decode(encode("DeadLetter", letter), expected="DeadLetter")
    assert set(decoded) == set(typing.get_type_hints(records.DeadLetter))
