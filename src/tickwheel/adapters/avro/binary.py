"""Avro's binary encoding of primitive values, byte for byte as fastavro writes and reads
them: what the generated codecs of the hot records (`adapters/avro/fast/`, written by
`codecs_gen` from `schemas/`, decision 0214) and the worker's attempt events (decision 0114)
are built on. These functions only write or read values; a codec checks that the current
schema is the one it was made for and otherwise falls back to the generic codec."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

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


_FALSE, _TRUE = b"\x00", b"\x01"


def write_boolean(value: bool) -> bytes:
    """Only a bool: anything else goes to the generic encoder, whatever it makes of it."""
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    raise TypeError("a boolean")


def write_bytes(value: bytes) -> bytes:
    if type(value) is not bytes:
        raise TypeError("bytes")
    return write_long(len(value)) + value


def write_embedded(value: Any, embed: Callable[[Mapping[str, Any]], bytes]) -> bytes:
    """A bytes field carrying another record's encoding: given as bytes, or as the record,
    whose bytes `embed` gives (the caller's, say a cache of what it already encoded)."""
    raw: bytes = value
    if type(value) is not bytes:
        if type(value) is not dict and not isinstance(value, Mapping):  # a dict: no ABC check
            raise TypeError("bytes or a record")
        raw = embed(value)
    return write_long(len(raw)) + raw


def write_opt_embedded(value: Any, embed: Callable[[Mapping[str, Any]], bytes]) -> bytes:
    return NULL if value is None else SOME + write_embedded(value, embed)


_EMPTY = b"\x00"  # an empty array or map: a zero block count


def write_block(items: list[bytes]) -> bytes:
    """An Avro array or map of `items` (already encoded) as one block, as fastavro writes it."""
    if not items:
        return _EMPTY
    return write_long(len(items)) + b"".join(items) + _EMPTY


# -- reading -----------------------------------------------------------------------------------
class Unusual(Exception):
    """Something a direct reader leaves to the generic decoder."""


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


def read_string_map(data: bytes, pos: int) -> tuple[dict[str, str], int]:
    """An Avro map of strings at `pos`: blocks of (key, value) pairs, as an array's are."""
    pairs, pos = read_array(data, pos, _read_string_pair)
    return dict(pairs), pos


def _read_string_pair(data: bytes, pos: int) -> tuple[tuple[str, str], int]:
    key, pos = read_string(data, pos)
    value, pos = read_string(data, pos)
    return (key, value), pos


def read_array(
    data: bytes, pos: int, read_item: Callable[[bytes, int], tuple[T, int]]
) -> tuple[list[T], int]:
    """An Avro array at `pos`, in blocks, each item read by `read_item`."""
    items: list[T] = []
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            return items, pos
        if count < 0:
            count = -count
            _, pos = read_long(data, pos)
        for _ in range(count):
            item, pos = read_item(data, pos)
            items.append(item)


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


# Epoch milliseconds are six-byte varints whose last four bytes (bits 14 and up) a batch's
# instants share for 16 s: those four bytes -> the bits they carry (bounded; cleared when full).
_INSTANT_HIGH: dict[bytes, int] = {}
_INSTANT_HIGH_MAX = 4096


def read_instant(data: bytes, pos: int) -> tuple[int, int]:
    """`read_long`, with the high bytes of a six-byte varint (an instant) looked up rather than
    walked: a key is only ever stored for four bytes that end a six-byte varint, and they
    determine every bit above the first 14."""
    high = _INSTANT_HIGH.get(data[pos + 2 : pos + 6])
    first, second = data[pos], data[pos + 1]
    if high is None or first < 0x80 or second < 0x80:
        value, end = read_long(data, pos)
        if end - pos == 6:
            if len(_INSTANT_HIGH) >= _INSTANT_HIGH_MAX:
                _INSTANT_HIGH.clear()
            z = (value << 1) ^ (value >> 63)  # zig-zag again: the varint's bits
            _INSTANT_HIGH[data[pos + 2 : end]] = z >> 14 << 14
        return value, end
    z = (first & 0x7F) | ((second & 0x7F) << 7) | high
    return (z >> 1) ^ -(z & 1), pos + 6


def read_opt_instant(data: bytes, pos: int) -> tuple[int | None, int]:
    branch = data[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise Unusual
    return read_instant(data, pos + 1)
