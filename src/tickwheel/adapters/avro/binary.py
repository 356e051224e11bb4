"""Avro's binary encoding of primitive values, for the hand-written codecs of the hottest
records (the worker's attempt events, decision 0114; the timer's requests and states, 0116;
the worker's request reader, 0117, and the timer's event reader, 0144). Each codec checks its
layout against the schema (`layout_header`) and falls back to the generic codec; these
functions only write or read values, byte for byte as fastavro does."""

from __future__ import annotations

import functools
from typing import Any

from tickwheel.adapters.avro._registry import default_registry

# A field with no default, in a codec's declared layout.
REQUIRED = "<required>"

NULL = b"\x00"
SOME = b"\x02"  # union branch 1 (the non-null type), zig-zag encoded


def _varint(z: int) -> bytes:
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_SMALL = [bytes((n,)) for n in range(0x80)]
# Varints of the bits above the lowest 14 of recent instants: epoch milliseconds share them
# for 16 s, so an event's times cost two bytes and a lookup (bounded; cleared when full).
_HIGH: dict[int, bytes] = {}
_HIGH_MAX = 4096


def write_long(n: int) -> bytes:
    """An Avro int or long: zig-zag, then a base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        if z < 0:
            raise OverflowError(f"{n} does not fit an Avro long")
        return _SMALL[z]
    if z < 0x4000:
        return bytes(((z & 0x7F) | 0x80, z >> 7))
    if z >> 64:
        raise OverflowError(f"{n} does not fit an Avro long")
    high = z >> 14
    tail = _HIGH.get(high)
    if tail is None:
        if len(_HIGH) >= _HIGH_MAX:
            _HIGH.clear()
        tail = _HIGH[high] = _varint(high)
    return bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80)) + tail


def write_string(s: str) -> bytes:
    data = s.encode()
    size = len(data)
    return (_SMALL[size << 1] if size < 64 else write_long(size)) + data


def write_opt_string(s: str | None) -> bytes:
    return NULL if s is None else SOME + write_string(s)


def write_opt_long(n: int | None) -> bytes:
    return NULL if n is None else SOME + write_long(n)


# -- reading -----------------------------------------------------------------------------------
class Unusual(Exception):
    """Something a hand-written reader leaves to the generic decoder."""


def _shape(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        return tuple(_shape(t) for t in avro_type)
    if isinstance(avro_type, dict):
        if avro_type["type"] == "enum":
            return ("enum", tuple(avro_type["symbols"]))
        return _shape(avro_type["type"])
    return avro_type


@functools.cache
def layout_header(record: str, layout: tuple[tuple[str, Any, Any], ...]) -> bytes | None:
    """The current version's header of `record` when its fields are `layout` ((name, shape,
    default or REQUIRED) in schema order, unions as tuples, enums as ("enum", symbols)), else
    None: the reader then hands every record to the generic decoder."""
    version = default_registry().current(record)
    declared = tuple(
        (f["name"], _shape(f["type"]), f.get("default", REQUIRED)) for f in version.schema["fields"]
    )
    return version.header if declared == layout else None


def read_long(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at `pos`: (value, position after it)."""
    byte = data[pos]
    pos += 1
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos
    z = byte & 0x7F
    shift = 7
    while True:
        byte = data[pos]
        pos += 1
        z |= (byte & 0x7F) << shift
        if byte < 0x80:
            # A tenth byte can carry bits past the 64th; the generic decoder reads into 64
            # bits and drops them, so this reader does too.
            z &= 0xFFFF_FFFF_FFFF_FFFF
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 63:
            raise Unusual


def read_string(data: bytes, pos: int) -> tuple[str, int]:
    byte = data[pos]
    if byte < 0x80:  # shorter than 64 bytes: a one-byte length
        size = (byte >> 1) ^ -(byte & 1)
        pos += 1
    else:
        size, pos = read_long(data, pos)
    end = pos + size
    if size < 0 or end > len(data):
        raise Unusual
    return data[pos:end].decode(), end


def read_opt_string(data: bytes, pos: int) -> tuple[str | None, int]:
    branch = data[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise Unusual
    return read_string(data, pos + 1)


def read_opt_long(data: bytes, pos: int) -> tuple[int | None, int]:
    branch = data[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise Unusual
    return read_long(data, pos + 1)
