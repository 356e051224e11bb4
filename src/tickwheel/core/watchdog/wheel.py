"""The deadline wheel: an evaluation visits the jobs whose deadline has come, not every job.

A job can be overdue only once the watermark reaches its plain deadline (`deadlines`), and
that deadline moves only two ways: later, by a success (a maximum), or anywhere, by a new
definition version (an edit, a resume, a delete, a calendar's recompile: `JobTable.touched`).
So each job is filed once under a time at or before its deadline, and looked at again only
when the watermark reaches that time or its definition changes:

* **filing**: a job whose deadline is `d` at watermark `w` goes into the bucket keyed by `d`
  rounded down to a power of two no more than half of `d - w` (ms) — coarse when far, exact
  (`d` itself) when close. When its bucket's time comes its deadline is computed again: it
  is due (a success moved it? filed again, later), or it is filed again, closer. A job is so
  looked at about log2(its interval in ms) times per deadline, and the buckets alive at once
  are a few per power of two, not one per job;
* **due**: a job past its deadline is visited every evaluation until it is not (its success
  or its edit moves the deadline), as the full scan did;
* **wholesale**: a profile whose chain is broken (no occurrence after the watermark, not
  finished) or that is disabled past its review date raises for every job of it at once; its
  jobs are listed by one scan of the table when that starts, kept while it lasts.

The visit is a superset of the jobs the full scan raises anything for; the evaluation then
applies the same per-job test as before to each job visited, in job id order, so its
transitions are the full scan's (tests/unit/core/watchdog/test_watchdog_wheel.py compares the two on
random logs). Memory: one bucket entry per job (a reference, 8 B) — the job ids themselves
are the table's. Decision 0133.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from tickwheel.core.schedule import CompiledSchedule
from tickwheel.core.watchdog.deadlines import Deadlines
from tickwheel.core.watchdog.jobs import JobProfile
from tickwheel.core.watchdog.table import JobTable
from tickwheel.errors import TickwheelError


def bucket_key(deadline: int, watermark: int) -> int:
    """Where a job not due yet is filed: `deadline` rounded down to a power of two at most
    half of what is left, so always after `watermark` (and `deadline` itself when close)."""
    width = 1 << max(0, ((deadline - watermark) >> 1).bit_length() - 1)
    return deadline - deadline % width


class DeadlineWheel:
    def __init__(self) -> None:
        self._buckets: dict[int, list[str]] = {}
        self._keys: list[int] = []  # a heap of the bucket keys
        self._due: set[str] = set()
        self._entries = 0  # bucket entries, stale ones included
        self._grace_ms: int | None = None  # the interval's grace the filing was made with
        # A schedule's next occurrence after the last watermark it was asked at: still the
        # answer for any watermark before it (None: it has none, for ever after).
        self._next: dict[CompiledSchedule, int | None] = {}
        self._members: dict[JobProfile, list[str]] = {}

    def visit(self, jobs: JobTable, watermark: int, grace_ms: int) -> tuple[list[str], list[str]]:
        """(the jobs whose overdue/broken chain must be judged at `watermark`, the jobs whose
        run conditions must be), each in job id order."""
        deadlines = Deadlines(jobs, grace_ms)
        visit: set[str] = set()
        rebuild = self._grace_ms != grace_ms or jobs.touched is None
        if rebuild or self._entries > 2 * len(jobs) + 1024:
            # First evaluation, other thresholds, or many edits' stale entries: file every
            # job afresh, then follow the edits.
            self._buckets, self._keys, self._due, self._entries = {}, [], set(), 0
            self._grace_ms = grace_ms
            jobs.touched = set()
            self._file(jobs, deadlines, jobs.columns().rows, watermark, visit)
        else:
            assert jobs.touched is not None
            touched, jobs.touched = jobs.touched, set()
            due, self._due = self._due, set()
            self._file(jobs, deadlines, touched | due, watermark, visit)
            for job_id in touched:
                self._join(jobs, job_id)
        while self._keys and self._keys[0] <= watermark:
            popped = self._buckets.pop(heapq.heappop(self._keys))
            self._entries -= len(popped)
            # A job filed twice (an edit moved its deadline earlier) is looked at once.
            self._file(
                jobs, deadlines, set(popped) if len(popped) > 1 else popped, watermark, visit
            )
        runs = set(jobs.slots)
        runs.update(jobs.last_runs)
        broken, disabled = self._wholesale(jobs, watermark)
        for profile in broken:
            visit.update(self._of(jobs, profile))
        for profile in disabled:
            runs.update(self._of(jobs, profile))
        for profile in set(self._members) - broken - disabled:
            del self._members[profile]
        return sorted(visit), sorted(runs)

    def _file(
        self,
        jobs: JobTable,
        deadlines: Deadlines,
        job_ids: Iterable[str],
        watermark: int,
        visit: set[str],
    ) -> None:
        rows = jobs.columns().rows
        buckets, due = self._buckets, self._due
        for job_id in job_ids:
            deadline = deadlines.of(job_id, rows[job_id])
            if deadline is None:
                continue  # owes nothing; an edit (touched) files it again
            if deadline <= watermark:
                visit.add(job_id)
                due.add(job_id)
                continue
            key = bucket_key(deadline, watermark)
            self._entries += 1
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [job_id]
                heapq.heappush(self._keys, key)
            else:
                bucket.append(job_id)

    def _wholesale(self, jobs: JobTable, watermark: int) -> tuple[set[JobProfile], set[JobProfile]]:
        """The profiles whose every job raises: a broken chain, a disable past its review."""
        broken: set[JobProfile] = set()
        disabled: set[JobProfile] = set()
        for profile in jobs.profiles():
            if not profile.enabled:
                if profile.review_by_ms is not None and watermark >= profile.review_by_ms:
                    disabled.add(profile)
                continue
            if not profile.recurring or profile.schedule is None:
                continue
            finished = profile.bounded and (
                profile.last_slot_ms is None or profile.last_slot_ms <= watermark
            )
            if not finished and self._upcoming(profile.schedule, watermark) is None:
                broken.add(profile)
        if len(self._next) > 2 * len(jobs.profiles()) + 1024:
            self._next = {}  # schedules no job has any more
        return broken, disabled

    def _upcoming(self, schedule: CompiledSchedule, watermark: int) -> int | None:
        if schedule in self._next:
            known = self._next[schedule]
            if known is None or watermark < known:
                return known
        try:
            upcoming = schedule.next_after(watermark)
        except TickwheelError:
            upcoming = None
        self._next[schedule] = upcoming
        return upcoming

    def _of(self, jobs: JobTable, profile: JobProfile) -> list[str]:
        """The jobs of `profile` now (its list made by one scan, then kept up by `_join`)."""
        rows, profile_of, deleted, _, _, _ = jobs.columns()
        number = jobs.profile_number(profile)
        if number is None:
            return []
        members = self._members.get(profile)
        if members is None:
            members = self._members[profile] = [
                job_id for job_id, row in rows.items() if profile_of[row] == number
            ]
        current = [
            job_id
            for job_id in members
            if profile_of[rows[job_id]] == number and not deleted[rows[job_id]]
        ]
        if len(current) < len(members):
            self._members[profile] = current
        return current

    def _join(self, jobs: JobTable, job_id: str) -> None:
        """An edited job joins its profile's list, if that profile has one."""
        if not self._members:
            return
        columns = jobs.columns()
        number = columns.profile[columns.rows[job_id]]
        profile = columns.profiles[number] if number >= 0 else None
        if profile is not None and profile in self._members:
            self._members[profile].append(job_id)
