"""Each job's plain deadline: the latest of its baselines plus its interval (decision 0093).

A job can be overdue at a watermark only once the watermark has reached this deadline (a
calendar's shifted deadline is never earlier, decision 0107), so it is the one number both
the evaluation's skip test (`conditions.job_conditions`) and the deadline wheel (`wheel`)
file a job by. One `Deadlines` serves one evaluation: its caches are per profile number,
which a later fold may free and reuse.
"""

from __future__ import annotations

from tickwheel.core.watchdog.jobs import BUCKET_MS, profile_interval
from tickwheel.core.watchdog.table import NONE, JobFacts, JobTable

# A profile's answer for one createdAt month: None, its jobs owe nothing.
_Intervals = dict[int, int | None]


class Deadlines:
    def __init__(self, jobs: JobTable, grace_ms: int) -> None:
        self._jobs = jobs
        self._grace_ms = grace_ms
        columns = jobs.columns()
        self._rows, self._profile_of = columns.rows, columns.profile
        self._deleted, self._created = columns.deleted, columns.created
        self._success_ms, self._profiles = columns.success_ms, columns.profiles
        self._history = jobs.history
        # profile number → createdAt month → interval; None: the profile owes nothing at all
        # (a one-off, disabled, or a schedule that does not compile).
        self._by_profile: dict[int, _Intervals | None] = {}

    def of(self, job_id: str, row: int | None = None) -> int | None:
        """The job's plain deadline (epoch ms), or None when it owes nothing whatever the
        watermark: no definition, deleted, a profile that owes nothing, no interval."""
        if row is None:
            row = self._rows[job_id]
        number = self._profile_of[row]
        if number < 0 or self._deleted[row]:
            return None
        if number in self._by_profile:
            intervals = self._by_profile[number]
        else:
            profile = self._profiles[number]
            assert profile is not None
            owes = profile.recurring and profile.enabled and profile.schedule is not None
            intervals = self._by_profile[number] = {} if owes else None
        if intervals is None:
            return None
        made = self._created[row]
        bucket = made // BUCKET_MS
        if bucket in intervals:
            interval_ms = intervals[bucket]
        else:
            profile = self._profiles[number]
            assert profile is not None
            found = profile_interval(profile, made, self._grace_ms)
            interval_ms = intervals[bucket] = None if found is None else found.ms
        if interval_ms is None:
            return None
        # The baseline, as `conditions._job_conditions` takes it: the latest of these.
        baseline = made
        if job_id in self._history:
            resumed = JobFacts(self._jobs, job_id, row).resumed_at_ms()
            if resumed is not None and resumed > baseline:
                baseline = resumed
        profile = self._profiles[number]
        assert profile is not None
        starts = profile.starts_at_ms
        if starts is not None and starts > baseline:
            baseline = starts
        success = self._success_ms[row]
        if success != NONE and success > baseline:
            baseline = success
        return baseline + interval_ms
