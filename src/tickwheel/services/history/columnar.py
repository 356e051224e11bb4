"""The sink's fast path for its two high-volume record kinds (decision 0123): the Avro bodies
of `ExecutionEvent`s and `ExecutionRequest`s go to ClickHouse as they are, in an Avro
container that ClickHouse decodes in C++, and each table's row is computed by a SELECT list
that is the SQL twin of `rows.execution_event_row`, `rows.execution_request_row` and
`rows.requested_event_row`. Python touches no field of these records: per record it slices
the body and appends where it was read (topic, partition, offset) and a check value; one
container block holds them all.

What the row path refuses, this path must not store: every row is checked in the SELECT
(instants within what `DateTime64(3)` holds, text valid UTF-8, and the check value read back
where it was written, which catches a body with bytes missing or to spare: the fields after
it would be read from the wrong place), and a failed check fails the whole insert with
`throwIf`. The sink then writes that batch's records through the row path, which
dead-letters the bad one and stores the rest. Only records of the schema's current version
take this path (an older version's defaults are the Avro reader's business, not ClickHouse's).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tickwheel.adapters.avro import HEADER_SIZE
from tickwheel.adapters.avro._registry import default_registry
from tickwheel.adapters.avro.binary import write_long, write_string
from tickwheel.services.history.rows import MAX_STORABLE_MS, MIN_STORABLE_MS

#: The value written after each record and checked by the SELECT: a body with bytes missing
#: or to spare shifts it, and the insert fails instead of storing a misread row.
CHECK_VALUE = 0x5EED_7A11_C0DE
_CHECK = write_long(CHECK_VALUE)
#: Avro container sync marker: any 16 bytes, the same in the header and after each block.
_SYNC = b"tickwheel-sink\x00\x01"
#: The single-object header (marker and fingerprint) is read as a leading `fixed` field, so a
#: record's value goes into the frame whole, without a slice (decision 0149), and the SELECT
#: checks it too: a body that ran past its end shifts the next record's header.
_HEADER_FIELD = {
    "name": "tw_header",
    "type": {"type": "fixed", "name": "tw_header_bytes", "size": HEADER_SIZE},
}
#: After each body: the check value, then where the record was read. The topic and partition
#: are one cached prefix per partition (with the check value); the offset is 8 bytes little
#: endian (`int.to_bytes`, no varint loop in Python), read back with `reinterpretAsInt64`.
_EXTRA_FIELDS = (
    {"name": "tw_check", "type": "long"},
    {"name": "tw_source_topic", "type": "string"},
    {"name": "tw_source_partition", "type": "int"},
    {"name": "tw_source_offset", "type": {"type": "fixed", "name": "tw_offset_bytes", "size": 8}},
)
_EXTRA_STRUCTURE = (
    "tw_check Int64, tw_source_topic String, tw_source_partition Int32, "
    "tw_source_offset FixedString(8)"
)


def read_offset(value: bytes) -> int:
    """The offset as the frame holds it (the inverse of `Frame.add`'s encoding)."""
    return int.from_bytes(value, "little", signed=True)


@runtime_checkable
class EncodedInsert(Protocol):
    """A history store that can insert records ClickHouse decodes itself (both ClickHouse
    backends can; the in-memory store cannot, and the sink then uses the row path alone)."""

    def insert_encoded(
        self,
        table: str,
        columns: Sequence[str],
        select: str,
        structure: str,
        data: bytes,
        input_format: str = "Avro",
        dedup_token: str | None = None,
    ) -> None: ...


@runtime_checkable
class EncodedUnionInsert(EncodedInsert, Protocol):
    """A store that can also insert several kinds of encoded records into one table in one
    statement, each `(select, structure, data)` (embedded chDB; decision 0187)."""

    def insert_encoded_union(
        self,
        table: str,
        columns: Sequence[str],
        sources: Sequence[tuple[str, str, bytes]],
        input_format: str = "Avro",
        dedup_token: str | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class EncodedTable:
    """One table a record kind fills: its columns, and the SELECT list computing them."""

    table: str
    columns: tuple[str, ...]
    select: str


@dataclass(frozen=True)
class EncodedKind:
    """A record kind on the fast path: the single-object header of its current version, the
    container header announcing that version's fields plus the sink's, and its tables."""

    schema: str
    header: bytes
    container_header: bytes
    structure: str
    tables: tuple[EncodedTable, ...]

    #: Per (topic, partition): the bytes after every body read there but its offset.
    trailers: dict[tuple[str, int], bytes] = field(default_factory=dict, compare=False)

    def trailer(self, topic: str, partition: int) -> bytes:
        """The check value, then the topic and partition: the same for every record read
        from one partition, so built once per partition."""
        where = (topic, partition)
        found = self.trailers.get(where)
        if found is None:
            found = self.trailers[where] = _CHECK + write_string(topic) + write_long(partition)
        return found

    def frame(self, messages: Sequence[Any]) -> bytes:
        """An Avro container holding one block of every message (as `Frame` builds it one
        message at a time: the sink's loop uses that)."""
        frame = Frame(self)
        for message in messages:
            frame.add(
                message, message.value(), message.topic(), message.partition(), message.offset()
            )
        return frame.data()


def dedup_token(table: str, *datas: bytes) -> str:
    """The insert's token: the framed data names every record's place and bytes, so the same
    records delivered again in the same cut give the same token, and offsets reused by other
    records (a topic recreated) do not. Several frames in one insert: over each in turn."""
    digest = hashlib.sha256(table.encode())
    for data in datas:
        digest.update(data)
    return f"tickwheel-history:{table}:avro:{digest.hexdigest()[:40]}"


def _container_header(schema: Mapping[str, Any]) -> bytes:
    extended = {**schema, "fields": [_HEADER_FIELD, *schema["fields"], *_EXTRA_FIELDS]}
    meta = {"avro.schema": json.dumps(extended).encode(), "avro.codec": b"null"}
    out = bytearray(b"Obj\x01")
    out += write_long(len(meta))
    for key, value in meta.items():
        out += write_string(key) + write_long(len(value)) + value
    return bytes(out + write_long(0) + _SYNC)


def _instant(column: str) -> str:
    return f"fromUnixTimestamp64Milli({column}, 'UTC')"


def _in_range(column: str, nullable: bool = False) -> str:
    check = f"{column} BETWEEN {MIN_STORABLE_MS} AND {MAX_STORABLE_MS}"
    return f"({column} IS NULL OR {check})" if nullable else check


def _utf8(columns: Iterable[str]) -> str:
    return " AND ".join(f"isValidUTF8(ifNull({c}, ''))" for c in columns)


def _guarded(first_column: str, valid: str, header: bytes) -> str:
    # throwIf returns 0 when the condition is false; the sum keeps the column's value and
    # makes ClickHouse evaluate the check for every row.
    return (
        f"if(throwIf(NOT ({valid} AND tw_check = {CHECK_VALUE} "
        f"AND tw_header = unhex('{header.hex()}')), "
        f"'tickwheel: a record the row path must judge') = 0, {first_column}, {first_column})"
    )


_SOURCE = ("tw_source_topic", "tw_source_partition", "reinterpretAsInt64(tw_source_offset)")
_EVENT_COLUMNS = (
    "event_id",
    "event_time",
    "event_type",
    "job_id",
    "job_type",
    "tenant_id",
    "execution_id",
    "attempt",
    "scheduled_time",
    "fire_time",
    "worker_id",
    "lease_deadline",
    "error_kind",
    "error",
    "reason",
    "details",
    "source_topic",
    "source_partition",
    "source_offset",
)


def _execution_events() -> EncodedKind:
    valid = " AND ".join(
        (
            _in_range("event_time"),
            _in_range("scheduled_time"),
            _in_range("fire_time", nullable=True),
            _in_range("lease_deadline", nullable=True),
            _utf8(_text_fields("ExecutionEvent")),
        )
    )
    select = ", ".join(
        (
            _guarded("event_id", valid, _header("ExecutionEvent")),
            _instant("event_time"),
            "event_type",
            "job_id",
            "job_type",
            "tenant_id",
            "execution_id",
            "toUInt32(greatest(attempt, 0))",
            _instant("scheduled_time"),
            _instant("fire_time"),
            "worker_id",
            _instant("lease_deadline"),
            "error_kind",
            "error",
            "reason",
            "if(ifNull(details, '') = '', '{}', details)",
            *_SOURCE,
        )
    )
    return _kind("ExecutionEvent", EncodedTable("execution_events", _EVENT_COLUMNS, select))


def _execution_requests() -> EncodedKind:
    valid = " AND ".join(
        (
            _in_range("requested_at"),
            _in_range("scheduled_time"),
            _in_range("fire_time"),
            _in_range("period_start"),
            _in_range("period_end", nullable=True),
            _utf8(_text_fields("ExecutionRequest")),
        )
    )
    requests = EncodedTable(
        "execution_requests",
        (
            "event_id",
            "event_time",
            "execution_id",
            "job_id",
            "job_version",
            "job_type",
            "tenant_id",
            "priority",
            "attempt",
            "trigger",
            "late",
            "scheduled_time",
            "fire_time",
            "period_start",
            "period_end",
            "max_attempts",
            "lease_seconds",
            "heartbeat_seconds",
            "payload",
            "source_topic",
            "source_partition",
            "source_offset",
        ),
        ", ".join(
            (
                _guarded(
                    "concat('request:', execution_id, ':', toString(attempt))",
                    valid,
                    _header("ExecutionRequest"),
                ),
                _instant("requested_at"),
                "execution_id",
                "job_id",
                "toUInt64(greatest(job_version, 0))",
                "job_type",
                "tenant_id",
                "priority",
                "toUInt32(greatest(attempt, 0))",
                "trigger",
                "late",
                _instant("scheduled_time"),
                _instant("fire_time"),
                _instant("period_start"),
                _instant("period_end"),
                "toUInt32(greatest(max_attempts, 0))",
                "toUInt32(greatest(lease_seconds, 0))",
                "toUInt32(greatest(heartbeat_seconds, 0))",
                "if(payload = '', '{}', payload)",
                *_SOURCE,
            )
        ),
    )
    # The `requested` event each request stands for (decision 0007; tickwheel.events).
    requested = EncodedTable(
        "execution_events",
        _EVENT_COLUMNS,
        ", ".join(
            (
                _guarded(
                    "concat('timer:requested:', execution_id, ':', toString(attempt))",
                    valid,
                    _header("ExecutionRequest"),
                ),
                _instant("requested_at"),
                "'requested'",
                "job_id",
                "job_type",
                "tenant_id",
                "execution_id",
                "toUInt32(greatest(attempt, 0))",
                _instant("scheduled_time"),
                _instant("fire_time"),
                "CAST(NULL, 'Nullable(String)')",
                "CAST(NULL, 'Nullable(DateTime64(3, \\'UTC\\'))')",
                "CAST(NULL, 'Nullable(String)')",
                "CAST(NULL, 'Nullable(String)')",
                "concat(trigger, if(late, ':late', ''))",
                "'{}'",
                *_SOURCE,
            )
        ),
    )
    return _kind("ExecutionRequest", requests, requested)


def _header(schema: str) -> bytes:
    return default_registry().current(schema).header


# The column type ClickHouse reads each Avro type as (an enum: its symbol). The structure and
# the text checks follow the current schema, so a new field needs no edit here (decision 0214).
_CLICKHOUSE_TYPES = {"string": "String", "long": "Int64", "int": "Int32", "boolean": "Bool"}


def _clickhouse_type(avro: Any) -> str:
    if isinstance(avro, list):  # a union with null
        (inner,) = (t for t in avro if t != "null")
        return f"Nullable({_clickhouse_type(inner)})"
    if isinstance(avro, dict):
        return "String" if avro["type"] == "enum" else _clickhouse_type(avro["type"])
    return _CLICKHOUSE_TYPES[avro]


def _structure(schema: Mapping[str, Any]) -> str:
    """The frame's columns: the header, every field of the current version, the sink's."""
    fields = ", ".join(f"{f['name']} {_clickhouse_type(f['type'])}" for f in schema["fields"])
    return f"tw_header FixedString({HEADER_SIZE}), {fields}, {_EXTRA_STRUCTURE}"


def _text_fields(schema: str) -> list[str]:
    """The current version's text fields: each checked to be UTF-8, as the row path's decoder
    checks every one."""
    fields = default_registry().current(schema).schema["fields"]
    text = ("String", "Nullable(String)")
    return [f["name"] for f in fields if _clickhouse_type(f["type"]) in text]


def _kind(schema: str, *tables: EncodedTable) -> EncodedKind:
    current = default_registry().current(schema)
    return EncodedKind(
        schema=schema,
        header=current.header,
        container_header=_container_header(current.schema),
        structure=_structure(current.schema),
        tables=tables,
    )


def encoded_kinds() -> dict[str, EncodedKind]:
    """The record kinds on the fast path, by schema name."""
    return {kind.schema: kind for kind in (_execution_events(), _execution_requests())}


@dataclass
class Frame:
    """The records of one kind read since the last commit: the messages they came in (the
    row path reads them again if the fast insert fails), and the frame's bytes so far, added
    as each record is read, since the sink's loop has its topic, partition, offset and value
    in hand then (decision 0149)."""

    kind: EncodedKind
    messages: list[Any] = field(default_factory=list)
    parts: list[bytes] = field(default_factory=list)

    def add(self, message: Any, value: bytes, topic: str, partition: int, offset: int) -> None:
        """One record: its whole value (header and body), the check value and its place."""
        self.messages.append(message)
        self.parts += (
            value,
            self.kind.trailer(topic, partition),
            offset.to_bytes(8, "little", signed=True),
        )

    def keep(self, messages: list[Any]) -> None:
        """Only `messages` (of this frame's) from now on: a revocation took the rest."""
        self.messages, self.parts = [], []
        for message in messages:
            self.add(
                message, message.value(), message.topic(), message.partition(), message.offset()
            )

    def data(self) -> bytes:
        """An Avro container holding one block of every record added: a record's value read
        as the kind's extended schema (the header as a leading field, then the fields, then
        the sink's after them: bytes followed by more encoded fields are the encoding of the
        record extended by those fields)."""
        size = sum(map(len, self.parts))
        return b"".join(
            (
                self.kind.container_header,
                write_long(len(self.messages)),
                write_long(size),
                *self.parts,
                _SYNC,
            )
        )
