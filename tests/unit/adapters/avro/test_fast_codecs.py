"""The generated codecs of the hot records (`tickwheel.adapters.avro.fast`, written by
`codecs_gen` from `schemas/`) are what the schemas say and fastavro's twins: every generated
writer gives the generic encoder's bytes (any field left to its default or set, memos hit or
missed) and refuses what it refuses; every generated reader gives the generic decoder's record
and leaves damaged bytes to it, which decodes or refuses them with its reason. Values are drawn
from the schemas themselves, so a new field is covered the day it is generated (decision 0214).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.adapters.avro import (
    UndecodableRecord,
    UnencodableRecord,
    codecs_gen,
    decode,
    default_registry,
    encode,
    records_gen,
)
from tickwheel.adapters.avro.fast import ENCODERS, encode_record, execution_request

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Instants as services write them (six-byte varints sharing their high bytes: the readers look
# those up), and any long around them.
INSTANTS = st.integers(1_800_000_000_000, 1_800_000_100_000) | LONGS
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=40)

# `@given(..., **DAMAGE)`: where to cut the bytes, one byte to overwrite, bytes to append.
DAMAGE: dict[str, st.SearchStrategy[Any]] = {
    "cut": st.integers(min_value=0, max_value=200),
    "flip": st.tuples(st.integers(min_value=0, max_value=200), st.integers(0, 255)),
    "extra": st.binary(max_size=3),
}


def damaged(data: bytes, cut: int, flip: tuple[int, int], extra: bytes) -> list[bytes]:
    """The record's bytes cut short, with bytes appended, and (if within it) one byte changed."""
    position, value = flip
    copies = [data[: cut % (len(data) + 1)], data + extra]
    if position < len(data):
        copies.append(data[:position] + bytes([value]) + data[position + 1 :])
    return copies


def answer(read: Callable[[bytes], Mapping[str, Any]], data: bytes) -> dict[str, Any] | str:
    """What `read` makes of `data`: the record, or the reason it refuses it (without the
    object addresses some of fastavro's errors name)."""
    try:
        return dict(read(data))
    except UndecodableRecord as exc:
        return re.sub(r" at 0x[0-9a-f]+", "", exc.reason)


def module_of(record: str) -> ModuleType:
    return importlib.import_module(f"{codecs_gen.PACKAGE}.{codecs_gen.snake(record)}")


WRITTEN = [name for name, fast in codecs_gen.FAST.items() if fast.write]
READ = [name for name, fast in codecs_gen.FAST.items() if fast.read]
PLAIN = [
    name for name in WRITTEN if not (codecs_gen.FAST[name].given or codecs_gen.FAST[name].embedded)
]


def strategy(avro: Any, embedded: tuple[str, ...] = (), field: str = "") -> st.SearchStrategy[Any]:
    """Values of an Avro type: a record's defaulted fields left out or set."""
    kind, detail = codecs_gen._kind(avro)
    if field in embedded:  # bytes, or the record itself for the caller's `embed`
        return (
            st.none()
            | st.binary(max_size=20)
            | records(default_registry().current("ExecutionRequest").schema)
        )
    if kind == "opt":
        return st.none() | strategy(detail[1])
    simple = {
        "string": TEXT,
        "long": INSTANTS,
        "int": INTS,
        "boolean": st.booleans(),
        "bytes": st.binary(max_size=20),
    }
    if kind in simple:
        return simple[kind]
    if kind == "enum":
        return st.sampled_from(detail[1])
    if kind == "array":
        return st.lists(strategy(detail, embedded), max_size=3)
    if kind == "map":
        return st.dictionaries(TEXT, strategy(detail, embedded), max_size=3)
    if kind == "record":
        return records(detail, embedded)
    raise AssertionError(f"no strategy for {avro!r}")


def records(schema: dict[str, Any], embedded: tuple[str, ...] = ()) -> st.SearchStrategy[Any]:
    fields = {f["name"]: strategy(f["type"], embedded, f["name"]) for f in schema["fields"]}
    defaulted = [f["name"] for f in schema["fields"] if "default" in f]

    @st.composite
    def draw_record(draw: st.DrawFn) -> dict[str, Any]:
        value = draw(st.fixed_dictionaries(fields))
        if defaulted:
            for name in draw(st.lists(st.sampled_from(defaulted), unique=True)):
                del value[name]
        return value

    return draw_record()


def current(record: str) -> dict[str, Any]:
    return default_registry().current(record).schema


def test_the_generated_package_is_what_the_schemas_generate() -> None:
    # Rerun `python -m tickwheel.adapters.avro.records_gen` after adding a schema version.
    assert records_gen.drifted(codecs_gen.target_dir(), make=codecs_gen.generate) == []


@pytest.mark.parametrize("record", list(codecs_gen.FAST))
def test_each_generated_codec_is_for_the_current_version(record: str) -> None:
    assert module_of(record).fast_layout()
    assert default_registry().current(record).header == module_of(record).HEADER


def test_the_records_written_whole_are_the_encoders_of_encode_record() -> None:
    assert sorted(ENCODERS) == sorted(PLAIN)


@pytest.mark.parametrize("record", PLAIN)
@settings(max_examples=300, deadline=None)  # never fail on speed: the machine is shared
@given(data=st.data())
def test_a_written_record_is_the_generic_encoders_bytes(record: str, data: st.DataObject) -> None:
    value = data.draw(records(current(record)))
    module = module_of(record)
    expected = encode(record, value)
    assert module.write(value) == expected  # the fast path itself, no fallback
    assert module.write(value) == expected  # again: its memos hit
    assert encode_record(record, value) == expected
    decoded = decode(expected, record)[1]
    assert {k: decoded[k] for k in value} == value


def _embed_requests(value: Any) -> Any:
    """`value` with every embedded request given as bytes, as the generic encoder takes it."""
    if isinstance(value, list):
        return [_embed_requests(v) for v in value]
    if isinstance(value, dict):
        return {
            k: execution_request.encode(v)
            if k == "request" and isinstance(v, dict)
            else _embed_requests(v)
            for k, v in value.items()
        }
    return value


@pytest.mark.parametrize("record", [n for n in WRITTEN if n not in PLAIN])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_record_written_with_arguments_is_the_generic_encoders_bytes(
    record: str, data: st.DataObject
) -> None:
    fast = codecs_gen.FAST[record]
    value = data.draw(records(current(record), fast.embedded))
    given_values = {name: data.draw(LONGS) for name in fast.given}
    module = module_of(record)
    written = module.write(value, **given_values, embed=execution_request.encode)
    assert written == encode(record, {**_embed_requests(value), **given_values})


EVENT = {
    "event_id": "wf:w:1",
    "event_time": 1,
    "workflow_id": "w",
    "definition_id": "d",
    "definition_version": 1,
    "event_type": "workflow_started",
}
COMMAND = {
    "command_id": "c",
    "job_id": "__wf/w/0",
    "kind": "run_step",
    "requested_at": 5,
    "attempt": 1,
    "compensation": False,
}
REQUEST = {
    "execution_id": "e-1",
    "job_id": "j",
    "job_version": 2,
    "job_type": "noop",
    "tenant_id": "t",
    "priority": "normal",
    "attempt": 1,
    "scheduled_time": 60_000,
    "fire_time": 60_000,
    "period_start": 0,
    "period_end": 60_000,
    "payload": "{}",
    "max_attempts": 3,
    "trigger": "scheduled",
    "late": False,
    "requested_at": 60_001,
}


@pytest.mark.parametrize(
    ("record", "value"),
    [
        ("WorkflowEvent", {**EVENT, "typo_field": 1}),  # a field the schema does not have
        ("WorkflowEvent", {k: v for k, v in EVENT.items() if k != "event_type"}),  # required
        ("WorkflowEvent", {**EVENT, "seq": 2**63}),  # out of a long's range
        ("WorkflowEvent", {**EVENT, "step_id": 7}),  # not a string
        ("TimerCommand", {**COMMAND, "kind": "explode"}),  # not a symbol
        (
            "WorkflowSnapshot",
            {
                "workflow_id": "w",
                "definition_id": "d",
                "definition_version": 1,
                "status": "running",
                "seq": 1,
                "updated_at": 0,
                "input_offsets": {"t": "x"},
            },
        ),  # a map of longs
        ("ExecutionRequest", {**REQUEST, "priority": "urgent"}),
        ("ExecutionRequest", {k: v for k, v in REQUEST.items() if k != "job_id"}),
    ],
)
def test_what_the_generic_encoder_refuses_is_refused(record: str, value: dict[str, Any]) -> None:
    with pytest.raises(UnencodableRecord):
        encode(record, value)
    with pytest.raises(UnencodableRecord):
        encode_record(record, value)


@pytest.mark.parametrize(
    ("record", "value"),
    [
        ("TimerCommand", {**COMMAND, "compensation": 1}),  # not a bool: the generic path
        ("WorkflowEvent", {**EVENT, "definition_version": True}),  # a bool as an int
        ("ExecutionRequest", {**REQUEST, "attempt": 1.0}),  # a float as an int
    ],
)
def test_values_of_another_type_are_written_as_the_generic_encoder_writes_them(
    record: str, value: dict[str, Any]
) -> None:
    for _ in range(2):  # memo missed, then hit by an equal value of the right type
        assert encode_record(record, value) == encode(record, value)
        typed = {
            k: (int(v) if type(v) in (bool, float) and k != "compensation" else v)
            for k, v in value.items()
        }
        assert encode_record(record, typed) == encode(record, typed)


def test_other_records_go_through_the_generic_encoder() -> None:
    alert = {
        "alert_id": "a",
        "event_time": 1,
        "kind": "k",
        "severity": "warning",
        "job_id": None,
        "tenant_id": None,
        "message": "m",
        "details": "{}",
    }
    assert encode_record("Alert", alert) == encode("Alert", alert)


def generic(record: str, data: bytes) -> dict[str, Any]:
    return decode(data, record)[1]


@pytest.mark.parametrize("record", READ)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_reader_gives_the_generic_decoders_record(
    record: str, data: st.DataObject
) -> None:
    value = data.draw(records(current(record)))
    raw = encode(record, value)
    expected = generic(record, raw)
    module = module_of(record)
    assert module.read(raw) == expected  # the fast path itself, no fallback
    assert module.read(raw) == expected  # again: its memo hit
    assert list(module.decode(raw)) == list(expected)  # the same fields, in schema order


@pytest.mark.parametrize("record", READ)
@settings(max_examples=500, deadline=None)
@given(data=st.data(), **DAMAGE)
def test_a_damaged_record_is_decoded_or_refused_as_the_generic_decoder_does(
    record: str, data: st.DataObject, cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    raw = encode(record, data.draw(records(current(record))))
    decoder = module_of(record).decode
    for candidate in damaged(raw, cut, flip, extra):
        assert answer(decoder, candidate) == answer(lambda b: generic(record, b), candidate)


@pytest.mark.parametrize("record", READ)
@settings(max_examples=300, deadline=None)
@given(data=st.data(), **DAMAGE)
def test_a_record_ending_in_nulls_reads_as_the_generic_decoder_reads_it(
    record: str, data: st.DataObject, cut: int, flip: tuple[int, int], extra: bytes
) -> None:
    # The tails a reader takes as one comparison (`null_tail`): all null, or all but the last.
    value = data.draw(records(current(record)))
    tail = codecs_gen.FAST[record].null_tail
    names = [f["name"] for f in current(record)["fields"]]
    for name in names[len(names) - tail : len(names) - data.draw(st.integers(0, 1))]:
        value[name] = None
    raw = encode(record, value)
    assert module_of(record).read(raw) == generic(record, raw)
    for candidate in damaged(raw, cut, flip, extra):
        assert answer(module_of(record).decode, candidate) == answer(
            lambda b: generic(record, b), candidate
        )


def test_an_older_version_is_left_to_the_generic_decoder_and_resolved() -> None:
    registry = default_registry()
    old = registry.versions("ExecutionRequest")[0]
    fields = {f["name"] for f in old.schema["fields"]}
    data = encode(
        "ExecutionRequest", {k: v for k, v in REQUEST.items() if k in fields}, version=old.version
    )
    assert execution_request.decode(data) == generic("ExecutionRequest", data)
    assert execution_request.decode(data)["queue"] is None  # a v1 request names no queue


def test_another_version_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if the registry's current version were not the one generated for (a schemas folder
    # of another release): every record goes through the generic codec.
    module = module_of("ExecutionRequest")
    monkeypatch.setattr(module, "HEADER", b"\xc3\x01" + b"\x00" * 8)
    monkeypatch.setattr(module, "write", lambda *a: pytest.fail("the fast path ran"))
    monkeypatch.setattr(module, "read", lambda *a: pytest.fail("the fast path ran"))
    module.fast_layout.cache_clear()
    try:
        assert not module.fast_layout()
        raw = encode("ExecutionRequest", REQUEST)
        assert module.encode(REQUEST) == raw
        assert module.decode(raw) == generic("ExecutionRequest", raw)
    finally:
        monkeypatch.undo()
        module.fast_layout.cache_clear()
    assert module.fast_layout()


def test_the_memos_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution_request, "_MEMO_MAX", 8)
    for n in range(50):
        data = encode("ExecutionRequest", {**REQUEST, "job_version": n})
        assert execution_request.decode(data)["job_version"] == n
        assert execution_request.encode({**REQUEST, "job_version": n}) == data
        assert len(execution_request._TAILS) <= 8
