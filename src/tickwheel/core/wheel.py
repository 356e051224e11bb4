"""A hashed timing wheel over flat arrays (docs/decisions/0012).

`slots` buckets of `tick_ms` each; an entry due at `f` lives in bucket
`(f // tick_ms) % slots` on an intrusive singly linked list. The lists and the entries
are parallel `array`s indexed by node number — fire time (int64), entry (int64), next
node (int32), generation (uint32) and a state byte — so an entry costs 25 bytes plus the
arrays' growth slack, with no Python object per entry. Freed nodes are reused through a
free list, so storage is bounded by the most entries ever live at once (what is inside
the horizon), not by how many passed through.

* `insert` and `cancel` are O(1). Cancel marks the node; the bucket walk frees it.
* `advance(to)` walks the buckets from the last position to `to`'s (at most one full
  turn), returns every entry with fire time <= `to` sorted by (fire time, entry), and
  leaves later entries — including ones more than a turn ahead — where they are. So
  nothing fires early, nothing is lost, and entries beyond the wheel's span are allowed
  (they are looked at once per turn until due).
* A handle packs (generation, node); it goes stale once its entry fires or is cancelled,
  so cancelling a stale handle whose node was reused returns False instead of removing
  the wrong entry.
"""

from __future__ import annotations

from array import array

_FREE, _LIVE, _CANCELLED = 0, 1, 2
_NODE_MASK = 0xFFFF_FFFF
_INT64 = (-(1 << 63), (1 << 63) - 1)


class TimingWheel:
    """Timers keyed by int entries, fired in time order by `advance` (see module doc)."""

    __slots__ = (
        "_cur",
        "_entry",
        "_fire",
        "_free",
        "_gen",
        "_heads",
        "_live",
        "_mask",
        "_next",
        "_now",
        "_state",
        "_tick",
    )

    def __init__(self, tick_ms: int, start_ms: int, *, slots: int = 65_536) -> None:
        """`tick_ms` is the bucket width; `slots` a power of two (span = tick_ms * slots)."""
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be >= 1, got {tick_ms}")
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two, got {slots}")
        self._tick = tick_ms
        self._mask = slots - 1
        self._heads = array("i", [-1]) * slots
        self._fire = array("q")
        self._entry = array("q")
        self._next = array("i")
        self._gen = array("I")
        self._state = bytearray()
        self._free = -1
        self._live = 0
        self._now = start_ms
        self._cur = start_ms // tick_ms

    @property
    def now_ms(self) -> int:
        """The instant the wheel was last advanced to (or its start)."""
        return self._now

    @property
    def tick_ms(self) -> int:
        """The bucket width."""
        return self._tick

    @property
    def span_ms(self) -> int:
        """How far ahead one turn of the wheel reaches."""
        return self._tick * (self._mask + 1)

    def __len__(self) -> int:
        return self._live

    def capacity(self) -> int:
        """Nodes allocated (live + cancelled-not-yet-reclaimed + free)."""
        return len(self._state)

    def insert(self, fire_at_ms: int, entry: int) -> int:
        """Schedule `entry` (an int64) at `fire_at_ms`; returns a handle for `cancel`.

        A fire time at or before `now_ms` is due at the next `advance`.
        """
        if not (_INT64[0] <= entry <= _INT64[1] and _INT64[0] <= fire_at_ms <= _INT64[1]):
            raise OverflowError("fire_at_ms and entry must fit in a signed 64-bit integer")
        i = self._free
        if i >= 0:
            self._free = self._next[i]
            self._fire[i] = fire_at_ms
            self._entry[i] = entry
            self._state[i] = _LIVE
        else:
            i = len(self._state)
            if i > 0x7FFF_FFFE:
                raise MemoryError("a TimingWheel holds at most 2**31 - 1 entries")
            self._fire.append(fire_at_ms)
            self._entry.append(entry)
            self._next.append(-1)
            self._gen.append(0)
            self._state.append(_LIVE)
        tick = fire_at_ms // self._tick
        if tick < self._cur:
            tick = self._cur
        slot = tick & self._mask
        self._next[i] = self._heads[slot]
        self._heads[slot] = i
        self._live += 1
        return (self._gen[i] << 32) | i

    def cancel(self, handle: int) -> bool:
        """Cancel a pending entry; False if it already fired, was cancelled, or never was."""
        i = handle & _NODE_MASK
        if i >= len(self._state) or self._state[i] != _LIVE or self._gen[i] != handle >> 32:
            return False
        self._state[i] = _CANCELLED
        self._gen[i] = (self._gen[i] + 1) & _NODE_MASK
        self._live -= 1
        return True

    def advance(self, to_ms: int) -> list[tuple[int, int]]:
        """Move time to `to_ms`; return the due (fire_at_ms, entry) pairs, in order."""
        if to_ms < self._now:
            raise ValueError(f"a TimingWheel never goes backwards ({to_ms} < {self._now})")
        self._now = to_ms
        end_tick = to_ms // self._tick
        start_tick = self._cur
        turns = min(end_tick - start_tick + 1, self._mask + 1)
        heads, nxt, fire, entry, state, gen = (
            self._heads,
            self._next,
            self._fire,
            self._entry,
            self._state,
            self._gen,
        )
        mask, free = self._mask, self._free
        due: list[tuple[int, int]] = []
        fired = 0
        for tick in range(start_tick, start_tick + turns):
            slot = tick & mask
            i = heads[slot]
            if i < 0:
                continue
            keep = -1
            while i >= 0:
                j = nxt[i]
                st = state[i]
                if st == _LIVE:
                    f = fire[i]
                    if f > to_ms:
                        nxt[i] = keep
                        keep = i
                        i = j
                        continue
                    due.append((f, entry[i]))
                    gen[i] = (gen[i] + 1) & _NODE_MASK
                    fired += 1
                state[i] = _FREE
                nxt[i] = free
                free = i
                i = j
            heads[slot] = keep
        self._free = free
        self._live -= fired
        self._cur = end_tick
        due.sort()
        return due
