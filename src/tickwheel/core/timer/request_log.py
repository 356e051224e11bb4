"""A partition's request topics as the write-ahead log of its timer state (decision 0008).

A job that simply fires does not get its TimerState written in the same transaction: the
request itself, on `executions.<priority>`, records that the slot was taken and that the
execution is in flight. The job's state follows later (with the next change of the job, or in
a quieter tick), so a burst costs one record per occurrence instead of two.

What makes that safe:
- every timer transaction of a partition has a number, `seq`, carried on from owner to owner;
  each request carries it in a header, each TimerState in its `seq` field;
- this class knows which jobs fired without their state since ("unsaved") and, for each
  request topic, from which offset a restore must read to find their requests; the
  partition's checkpoint carries those offsets, written in the same transaction;
- a restore replays, for each job, only requests with a higher `seq` than its state's.

Pure bookkeeping: no I/O, times are arguments.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

# Header of a request naming the timer transaction that wrote it.
SEQ_HEADER = "tickwheel-seq"
# A state left for later is written by then even if every tick is busy, which bounds what a
# restore must replay from the request topics.
MAX_UNSAVED_AGE_MS = 10_000
# A quiet tick holds its states back while another partition of the instance still bursts
# (decision 0184), but never for more unsaved jobs than this: what a restore replays stays
# bounded in count as well as in age.
MAX_DEFERRED_STATES = 100_000


def bursting(*, fired: int, backlog: int, max_batch: int) -> bool:
    """Whether a partition's tick was a burst's: occurrences still waiting, or the batch more
    than half full (the opposite of the quiet tick that writes states)."""
    return backlog > 0 or fired >= max_batch - max_batch // 2


class RequestLog:
    """The unsaved jobs of one partition and where their requests are."""

    def __init__(
        self,
        seq: int,
        end_offsets: Mapping[str, int],
        *,
        replayed_from: Mapping[str, int] | None = None,
        replayed: Iterable[str] = (),
        now_ms: int = 0,
    ) -> None:
        """After a restore: `seq` is the highest transaction number seen, `end_offsets` where
        the request topics ended. Jobs rebuilt from requests read from `replayed_from` are
        still unsaved: until their states are written, a restore must read from there again."""
        # The last committed transaction number.
        self.seq = seq
        # Per request topic, (seq, offset) marks: what a transaction numbered `seq` or later
        # (or a job replayed at the restore, counted as `seq`) still needs lies at `offset`
        # or later. The first come from the restore, the others from each transaction's
        # first delivery.
        self._marks: dict[str, deque[tuple[int, int]]] = {}
        for topic, offset in end_offsets.items():
            marks = self._marks[topic] = deque()
            if replayed_from is not None and topic in replayed_from:
                marks.append((seq, replayed_from[topic]))
            marks.append((seq + 1, offset))
        # Job id -> (seq, committed at ms) of its oldest request not yet covered by its state,
        # in that order (dicts keep insertion order).
        self.unsaved: dict[str, tuple[int, int]] = dict.fromkeys(replayed, (seq, now_ms))

    def __len__(self) -> int:
        return len(self.unsaved)

    def oldest_age_ms(self, now_ms: int) -> int:
        if not self.unsaved:
            return 0
        return now_ms - next(iter(self.unsaved.values()))[1]

    def oldest(self, limit: int) -> list[str]:
        """Up to `limit` unsaved jobs, oldest first: whose states a quiet tick writes."""
        jobs: list[str] = []
        for job_id in self.unsaved:
            if len(jobs) >= limit:
                break
            jobs.append(job_id)
        return jobs

    def states_due(
        self,
        *,
        fired: int,
        backlog: int,
        max_batch: int,
        lag_ms: int,
        now_ms: int,
        burst_under_way: bool = False,
    ) -> list[str]:
        """The unsaved jobs whose states this tick writes, oldest first. A quiet tick (nothing
        waiting, the batch at most half full) writes what fits once they are `lag_ms` old,
        unless a burst is still under way in the instance (`burst_under_way`: the states
        wait for the burst's end, up to MAX_DEFERRED_STATES and MAX_UNSAVED_AGE_MS, so the
        burst's transactions carry requests only); past MAX_UNSAVED_AGE_MS a busy tick writes
        at least as many as it fires, so the tail a restore replays stops growing."""
        if not self.unsaved:
            return []
        age = self.oldest_age_ms(now_ms)
        room = max_batch - fired
        quiet = backlog == 0 and room > max_batch // 2 and age >= lag_ms
        deferred = (
            burst_under_way
            and len(self.unsaved) <= MAX_DEFERRED_STATES
            and age <= MAX_UNSAVED_AGE_MS
        )
        if quiet and not deferred:
            return self.oldest(room)
        if age > max(lag_ms, MAX_UNSAVED_AGE_MS):
            return self.oldest(max(room, fired, 1))
        return []

    def checkpoint_offsets(self, saved: Iterable[str], fired: Iterable[str]) -> dict[str, int]:
        """Where a restore must start reading each request topic, as it will stand once the
        next transaction (writing the states of `saved`, firing `fired` without theirs)
        commits; empty when nothing will be unsaved. That transaction's own offsets are not
        known before it commits, so an earlier mark stands in: reading a little more is
        harmless (seq decides what a request still means)."""
        saved_set = set(saved)
        oldest = None
        for job_id, (seq, _at) in self.unsaved.items():
            if job_id not in saved_set:
                oldest = seq
                break
        if oldest is None:
            if not any(job_id not in saved_set for job_id in fired):
                return {}
            oldest = self.seq + 1
        offsets = {}
        for topic, marks in self._marks.items():
            offset = marks[0][1]
            for mark_seq, mark_offset in marks:
                if mark_seq > oldest:
                    break
                offset = mark_offset
            offsets[topic] = offset
        return offsets

    def committed(
        self,
        seq: int,
        fired: Iterable[str],
        saved: Iterable[str],
        first_offsets: Mapping[str, int],
        now_ms: int,
    ) -> None:
        """Transaction `seq` committed: `fired` jobs are unsaved from it, `saved` ones are
        covered, and its first request on each topic landed at `first_offsets`."""
        self.seq = seq
        for job_id in saved:
            self.unsaved.pop(job_id, None)
        for job_id in fired:
            if job_id not in self.unsaved:  # an older unsaved request keeps its place
                self.unsaved[job_id] = (seq, now_ms)
        for topic, offset in first_offsets.items():
            self._marks.setdefault(topic, deque()).append((seq, offset))
        self._prune()

    def _prune(self) -> None:
        """Forget marks no restore needs: before the last one at or below the oldest unsaved."""
        oldest = next(iter(self.unsaved.values()))[0] if self.unsaved else self.seq + 1
        for marks in self._marks.values():
            while len(marks) > 1 and marks[1][0] <= oldest:
                marks.popleft()


def first_offset_recorder(first_offsets: dict[str, int], topic: str, partition: int) -> Any:
    """A delivery callback noting where a transaction's first request on `topic` landed (the
    commit flushes, so it has run once the commit returns). A report from another partition
    is ignored: a mark must describe the partition whose checkpoint carries it."""

    def record(err: Any, msg: Any) -> None:
        if err is None and msg.partition() == partition:
            first_offsets[topic] = msg.offset()

    return record
