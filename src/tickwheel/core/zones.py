"""IANA time zones: validation, and each zone's UTC-offset timeline as integer segments.

`zoneinfo` (the system tz database, or the `tzdata` package) is the only source of truth
for offsets. `ZoneTimeline` turns it into the list of offset changes ("transitions"),
found by probing the offset once a day and bisecting to the exact second wherever it
changed. That is exact for the whole tz database from 1900 on: no two offset changes in
it lie closer than four days (measured over all 599 zones; see docs/decisions/0010).
Transitions are cached per 32-day chunk, so a one-hour window costs a few dozen probes
once per zone, and later lookups are a bisect.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, available_timezones

from tickwheel.core.errors import InvalidSchedule, OutOfRange

MAX_ZONE_LENGTH = 64
DAY_S = 86_400
CHUNK_S = 32 * DAY_S
# Instants the core computes schedules for: 1900-01-01 to 9000-01-01 UTC, in seconds.
MIN_INSTANT_S = -2_208_988_800
MAX_INSTANT_S = 221_845_392_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CHUNK_CACHE_LIMIT = 4096
_EXAMPLES = "such as 'Europe/London', 'America/New_York' or 'UTC'"
_OFFSET_LIKE = re.compile(r"^(?:UTC|GMT|Z)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


@cache
def _known_zones() -> frozenset[str]:
    return frozenset(available_timezones())


@cache
def _lowercase_index() -> dict[str, str]:
    return {name.lower(): name for name in _known_zones()}


def _fail(message: str) -> InvalidSchedule:
    return InvalidSchedule("timezone", message)


def _offset_message(name: str, match: re.Match[str]) -> str:
    sign, hours_text, minutes_text = match.groups()
    hours = int(hours_text)
    minutes = int(minutes_text or 0)
    hint = "an IANA zone name for the place, such as 'Europe/Moscow' or 'Asia/Kolkata'"
    if minutes == 0 and ((sign == "+" and hours <= 14) or (sign == "-" and hours <= 12)):
        inverted = "-" if sign == "+" else "+"
        hint += (
            f", or 'Etc/GMT{inverted}{hours}' for a fixed UTC{sign}{hours:02d}:00 "
            "(the sign of Etc/GMT zones is inverted)"
        )
    return f"{name!r} is a fixed UTC offset, not an IANA time zone; accepted: {hint}"


def validate_zone(name: str | None) -> str:
    """Return the IANA key to use for `name`; None means "UTC", never the host's zone.

    Raises `InvalidSchedule` (field `timezone`) for unknown, non-IANA, over-long or
    non-ASCII names, saying what is accepted.
    """
    if name is None:
        return "UTC"
    if len(name) > MAX_ZONE_LENGTH:
        raise _fail(
            f"time zone name is {len(name)} characters long; accepted: an IANA zone name of at "
            f"most {MAX_ZONE_LENGTH} characters {_EXAMPLES}"
        )
    for char in name:
        if not char.isascii():
            raise _fail(
                f"time zone name contains the non-ASCII character {char!r}; "
                f"accepted: an IANA zone name {_EXAMPLES}"
            )
    if not name.strip():
        raise _fail(
            f"time zone is empty; accepted: an IANA zone name {_EXAMPLES} (omit it for UTC)"
        )
    if name == "localtime":
        raise _fail(
            "'localtime' is the host's zone, which differs between machines; "
            f"accepted: an IANA zone name {_EXAMPLES}"
        )
    if name in _known_zones():
        return name
    offset = _OFFSET_LIKE.match(name.strip())
    if offset is not None:
        raise _fail(_offset_message(name, offset))
    suggestion = _lowercase_index().get(name.strip().lower())
    if suggestion is not None and suggestion != "localtime":
        raise _fail(
            f"unknown time zone {name!r}; did you mean {suggestion!r}? "
            "accepted: an IANA zone name, spelled exactly (names are case-sensitive)"
        )
    raise _fail(f"unknown time zone {name!r}; accepted: an IANA zone name {_EXAMPLES}")


def check_instant_s(u: int) -> None:
    """Raise `OutOfRange` unless `u` (epoch seconds) lies in the supported range."""
    if not MIN_INSTANT_S <= u < MAX_INSTANT_S:
        raise OutOfRange(f"instant {u} s is outside the supported range 1900-01-01..9000-01-01 UTC")


class Segment(NamedTuple):
    """A stretch [start, end) of UTC seconds during which the zone's offset is constant.

    `offset_before` is the offset in effect just before `start`, `offset_after` the one
    from `end` on. A bound with no offset change there (the search looked 32 days past
    it and found none) has `offset_before == offset` (resp. `offset_after == offset`).
    """

    start: int
    end: int
    offset: int
    offset_before: int
    offset_after: int


class _Chunk(NamedTuple):
    offset_before: int  # in effect just before the chunk's first second
    transitions: tuple[int, ...]  # instants in the chunk where the offset changes
    offsets: tuple[int, ...]  # the offset from each transition on


class ZoneTimeline:
    """The UTC-offset timeline of one zone, computed lazily and shared process-wide."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._zone = ZoneInfo(key)
        self._chunks: dict[int, _Chunk] = {}
        self._lock = threading.Lock()

    def _probe(self, u: int) -> int:
        offset = (_EPOCH + timedelta(seconds=u)).astimezone(self._zone).utcoffset()
        assert offset is not None  # a ZoneInfo always has one
        return offset.days * DAY_S + offset.seconds

    def _compute(self, k: int) -> _Chunk:
        start, end = k * CHUNK_S, (k + 1) * CHUNK_S
        transitions: list[int] = []
        offsets: list[int] = []
        p = start - 1
        before = current = self._probe(p)
        while p < end - 1:
            q = min(p + DAY_S, end - 1)
            at_q = self._probe(q)
            lo = p
            while at_q != current:
                # Find the first second in (lo, q] whose offset differs from `current`.
                a, b = lo, q
                while b - a > 1:
                    mid = (a + b) // 2
                    if self._probe(mid) == current:
                        a = mid
                    else:
                        b = mid
                current = self._probe(b)
                transitions.append(b)
                offsets.append(current)
                lo = b
            p = q
        return _Chunk(before, tuple(transitions), tuple(offsets))

    def _chunk(self, k: int) -> _Chunk:
        chunk = self._chunks.get(k)
        if chunk is None:
            with self._lock:
                chunk = self._chunks.get(k)
                if chunk is None:
                    chunk = self._compute(k)
                    if len(self._chunks) >= _CHUNK_CACHE_LIMIT:
                        self._chunks.clear()
                    self._chunks[k] = chunk
        return chunk

    def offset_at(self, u: int) -> int:
        """The zone's UTC offset in seconds at instant `u` (epoch seconds)."""
        chunk = self._chunk(u // CHUNK_S)
        i = bisect_right(chunk.transitions, u)
        return chunk.offsets[i - 1] if i else chunk.offset_before

    def wall_of(self, u: int) -> int:
        """The local wall time (as epoch-like seconds) at instant `u`."""
        return u + self.offset_at(u)

    def instant_of(self, wall: int) -> int:
        """The instant a local wall time names: the earlier of two in a repeated hour, and
        the first valid instant after the gap (the transition) for a wall that does not
        exist (the `shift_earlier` policy, decision 0010). Exact because no two offset
        changes lie closer than four days: the offsets two days either side are the only
        candidates."""
        candidates = sorted({self.offset_at(wall - 2 * DAY_S), self.offset_at(wall + 2 * DAY_S)})
        for offset in reversed(candidates):  # the larger offset names the earlier instant
            if self.offset_at(wall - offset) == offset:
                return wall - offset
        return self.segment(wall - candidates[0]).start

    def segment(self, u: int) -> Segment:
        """The constant-offset segment containing instant `u`."""
        k = u // CHUNK_S
        chunk = self._chunk(k)
        trans, offs = chunk.transitions, chunk.offsets
        i = bisect_right(trans, u)
        offset = offs[i - 1] if i else chunk.offset_before
        if i:
            start = trans[i - 1]
            before = offs[i - 2] if i >= 2 else chunk.offset_before
        else:
            prev = self._chunk(k - 1)
            if prev.transitions:
                start = prev.transitions[-1]
                n = len(prev.transitions)
                before = prev.offsets[-2] if n >= 2 else prev.offset_before
            else:
                start, before = (k - 1) * CHUNK_S, offset
        if i < len(trans):
            end, after = trans[i], offs[i]
        else:
            nxt = self._chunk(k + 1)
            if nxt.transitions:
                end, after = nxt.transitions[0], nxt.offsets[0]
            else:
                end, after = (k + 2) * CHUNK_S, offset
        return Segment(start, end, offset, before, after)


_timelines: dict[str, ZoneTimeline] = {}
_timelines_lock = threading.Lock()


def zone_timeline(key: str) -> ZoneTimeline:
    """The shared timeline of a validated zone key."""
    timeline = _timelines.get(key)
    if timeline is None:
        with _timelines_lock:
            timeline = _timelines.setdefault(key, ZoneTimeline(key))
    return timeline
