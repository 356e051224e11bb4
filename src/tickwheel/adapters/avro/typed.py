"""The typed boundary of the codec: bytes in, a `tickwheel.records` type out.

    >>> from tickwheel.records import JobDefinition
    >>> definition = decode_as(JobDefinition, data)  # a JobDefinition, or UndecodableRecord

The record's type names the record: the generator writes each TypedDict under its schema's
name, so `decode_as(JobDefinition, data)` is `decode(data, expected="JobDefinition")[1]`
with the type mypy needs, and no `[1]` or `cast` at each caller (decision 0157). Encoding
needs nothing more: `encode(name, value)` takes any `Mapping[str, Any]`, the TypedDicts
included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar, cast

from tickwheel.adapters.avro._registry import SchemaRegistry, default_registry

Record = TypeVar("Record", bound=Mapping[str, object])


def record_name(record_type: type[Mapping[str, object]]) -> str:
    """The Avro record a `tickwheel.records` type stands for (its schema's name)."""
    return record_type.__name__


def decode_as(
    record_type: type[Record], data: bytes, registry: SchemaRegistry | None = None
) -> Record:
    """Decode single-object Avro that must be a `record_type`, in its current version.

    Bytes of another record, of no known schema, or corrupt raise `UndecodableRecord`, as
    `decode(data, expected=...)` does: the caller dead-letters them with that reason.
    """
    codec = registry if registry is not None else default_registry()
    _, value = codec.decode(data, expected=record_type.__name__)
    # The registry decoded a complete record of this schema's current version, whose fields
    # are the TypedDict's keys (tests/unit/records/test_records_drift.py): the cast is the
    # one place the dict becomes its type.
    return cast(Record, value)
