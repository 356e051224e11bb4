"""Avro's binary encoding of primitive values, for the hand-written codecs of the hottest
records (the worker's attempt events, decision 0114; the timer's requests and states, 0116).
Each codec checks its layout against the schema and falls back to the generic encoder; these
functions only write values, byte for byte as fastavro writes them."""

from __future__ import annotations

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
