"""What the property tests of the hand-written Avro readers share (the timer's
`ExecutionEvent` reader, the worker's `ExecutionRequest` reader: both built on
`adapters/avro/binary.py`): the value strategies, the damage done to a record's bytes, and the
answer compared with the generic decoder's (the record, or the refusal's reason)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from tickwheel.adapters.avro import UndecodableRecord

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TEXT = st.text(max_size=80)
OPTIONAL_TEXT = st.none() | TEXT

# `@given(record=..., **DAMAGE)`: where to cut the bytes, one byte to overwrite, bytes to append.
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


def refusal_reason(exc: UndecodableRecord) -> str:
    """The refusal's reason, without the object addresses some of fastavro's errors name."""
    return re.sub(r" at 0x[0-9a-f]+", "", exc.reason)


def answer(read: Callable[[bytes], Mapping[str, Any]], data: bytes) -> dict[str, Any] | str:
    """What `read` makes of `data`: the record, or the reason it refuses it."""
    try:
        return dict(read(data))
    except UndecodableRecord as exc:
        return refusal_reason(exc)
