"""Every job's facts in columns: the watchdog holds a million definitions in ~200 B each.

A job is a row: its numbers (version, createdAt, updatedAt, last success and its slot, timer
partition, deleted) sit in typed arrays, and what its definition says alike with other jobs
(type, tenant, schedule, limits) is one shared `JobProfile`, referenced by number. What only
some jobs have lives in sparse maps keyed by job id: the older definition versions of a job
edited more than once, the slots it has in flight, the newest run whose length is known.
`JobFacts` is a view of one row, made on access; its readers (conditions, runs, parents) see
the same attributes the per-job object had (decision 0106).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tickwheel.core.watchdog.jobs import VERSIONS_KEPT, JobProfile, JobSpec

NONE = -(2**63)  # "not known" in a column of instants
_EMPTY: Mapping[int, SlotFacts] = {}


@dataclass(slots=True)
class SlotFacts:
    """What happened to one occurrence (job, scheduled time), over all its attempts."""

    attempt: int = 0
    stage: int = 0  # STAGES of the highest attempt seen
    dead: bool = False
    skipped: bool = False
    worker: str | None = None
    # The run of the highest attempt that was leased: when it was leased, and when it
    # succeeded (earliest of each, so a redelivery or another order gives the same).
    run_attempt: int = 0
    leased_at: int | None = None
    succeeded_at: int | None = None

    def ran(self, attempt: int, leased_at: int | None, succeeded_at: int | None) -> None:
        if attempt > self.run_attempt:
            self.run_attempt, self.leased_at, self.succeeded_at = attempt, None, None
        if attempt == self.run_attempt:
            if leased_at is not None:
                self.leased_at = min(leased_at, self.leased_at or leased_at)
            if succeeded_at is not None:
                self.succeeded_at = min(succeeded_at, self.succeeded_at or succeeded_at)

    def see(self, attempt: int, stage: int, worker: str | None) -> None:
        if attempt > self.attempt:
            self.attempt, self.stage, self.worker = attempt, stage, worker
        elif attempt == self.attempt and stage > self.stage:
            self.stage = stage
            self.worker = worker or self.worker
        elif attempt == self.attempt and stage == self.stage and worker is not None:
            self.worker = min(worker, self.worker or worker)  # any order gives the same one


class Columns(NamedTuple):
    """Read-only views of a `JobTable`'s columns (`JobTable.columns`); never written to."""

    rows: Mapping[str, int]  # job id → row
    profile: array[int]  # row → profile number (-1: no definition)
    deleted: array[int]
    created: array[int]
    success_ms: array[int]  # NONE: no success known
    profiles: Sequence[JobProfile | None]  # profile number → profile


def _known(value: int) -> int | None:
    return None if value == NONE else value


class JobTable(Mapping[str, "JobFacts"]):
    """job id → `JobFacts` (a view, made on each lookup)."""

    def __init__(self) -> None:
        self._rows: dict[str, int] = {}
        self._version = array("q")
        self._created = array("q")
        self._updated = array("q")
        self._success_ms = array("q")
        self._success_slot = array("q")
        # The length (ms) of the run of the last success's slot, -1: not known. Kept for every
        # job (4 B), so a job edited to add minRunTime is judged by the run it had before it
        # (`last_runs` holds the full run only for jobs that declare a run time; 0134).
        self._run_ms = array("i")
        self._profile = array("i")  # -1: no definition (a job known from its events only)
        self._partition = array("h")  # -1: not known
        self._deleted = array("b")
        # Tenants by number (a few distinct ones, held by every job): never freed.
        self._tenant = array("i")
        self._tenants: list[str] = []
        self._tenant_numbers: dict[str, int] = {}
        # Profiles by number, shared by every job that says the same; one no job uses any
        # more is freed, its number reused, so edits do not grow the table.
        self._profiles: list[JobProfile | None] = []
        self._profile_numbers: dict[JobProfile, int] = {}
        self._profile_users = array("q")
        self._free_profiles: list[int] = []
        # Sparse: only the jobs that have one.
        # version → (enabled, updatedAt) of every version kept, for a job with more than one:
        # all the older versions are read for (when it was resumed, since when disabled).
        self.history: dict[str, dict[int, tuple[bool, int]]] = {}
        self.slots: dict[str, dict[int, SlotFacts]] = {}
        self.last_runs: dict[str, tuple[int, int, int, int]] = {}
        # The jobs whose definition changed since the deadline wheel last looked (None: no
        # wheel follows this table yet, so nothing is recorded).
        self.touched: set[str] | None = None

    # -- Mapping ---------------------------------------------------------------------------
    def __getitem__(self, job_id: str) -> JobFacts:
        return JobFacts(self, job_id, self._rows[job_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._rows

    # -- writes ----------------------------------------------------------------------------
    def row(self, job_id: str) -> int:
        """The job's row, made empty on first sight."""
        row = self._rows.get(job_id)
        if row is None:
            row = self._rows[job_id] = len(self._version)
            for column in (self._version, self._created, self._updated):
                column.append(0)
            self._success_ms.append(NONE)
            self._success_slot.append(NONE)
            self._run_ms.append(-1)
            self._profile.append(-1)
            self._partition.append(-1)
            self._deleted.append(0)
            self._tenant.append(-1)
        return row

    def spec(self, row: int, job_id: str) -> JobSpec | None:
        number = self._profile[row]
        if number < 0:
            return None
        profile = self._profiles[number]
        assert profile is not None
        tenant = self._tenants[self._tenant[row]]
        return JobSpec(
            job_id, self._version[row], self._created[row], self._updated[row], tenant, profile
        )

    def set_spec(self, job_id: str, spec: JobSpec | None) -> None:
        """Make `spec` the job's newest version (None: it has none, e.g. after a delete)."""
        row = self.row(job_id)
        self.touch(job_id)
        old = self._profile[row]
        if spec is None:
            self._profile[row] = -1
        else:
            self._version[row], self._created[row] = spec.version, spec.created_at_ms
            self._updated[row] = spec.updated_at_ms
            tenant = self._tenant_numbers.get(spec.tenant_id)
            if tenant is None:
                tenant = self._tenant_numbers[spec.tenant_id] = len(self._tenants)
                self._tenants.append(spec.tenant_id)
            self._tenant[row] = tenant
            self._profile[row] = self._take_profile(spec.profile)
        if old >= 0:
            self._drop_profile(old)

    def touch(self, job_id: str) -> None:
        """Its deadline may have moved other than later (an edit, a version's history)."""
        if self.touched is not None:
            self.touched.add(job_id)

    def remember_versions(self, job_id: str, versions: Mapping[int, tuple[bool, int]]) -> None:
        """Fold versions kept past the compaction of the definitions (decision 0190): each is
        one the job had, so a version already held is the same and the union is what a replay
        of every version would hold, in any order."""
        self.row(job_id)  # the deadline wheel reads the row of every job it is told of
        kept = self.history.setdefault(job_id, {})
        for version, value in versions.items():
            kept.setdefault(version, value)
        while len(kept) > VERSIONS_KEPT:
            del kept[min(kept)]
        self.touch(job_id)

    def profile_number(self, profile: JobProfile) -> int | None:
        """The number `profile` is held under, None when no job has it."""
        return self._profile_numbers.get(profile)

    def _take_profile(self, profile: JobProfile) -> int:
        number = self._profile_numbers.get(profile)
        if number is None:
            if self._free_profiles:
                number = self._free_profiles.pop()
                self._profiles[number] = profile
            else:
                number = len(self._profiles)
                self._profiles.append(profile)
                self._profile_users.append(0)
            self._profile_numbers[profile] = number
        self._profile_users[number] += 1
        return number

    def _drop_profile(self, number: int) -> None:
        self._profile_users[number] -= 1
        if self._profile_users[number] == 0:
            profile = self._profiles[number]
            assert profile is not None
            del self._profile_numbers[profile]
            self._profiles[number] = None
            self._free_profiles.append(number)

    def columns(self) -> Columns:
        """The columns an evaluation's hot loop reads directly, without a view per job: only
        the jobs a cheap test cannot clear get a `JobFacts` (decision 0093)."""
        return Columns(
            self._rows,
            self._profile,
            self._deleted,
            self._created,
            self._success_ms,
            self._profiles,
        )

    def profiles(self) -> list[JobProfile]:
        """The distinct profiles in use (for a bench, or a metric)."""
        return [p for p in self._profiles if p is not None]


class JobFacts:
    """One job's facts: a view of its row in a `JobTable`."""

    __slots__ = ("_row", "_table", "job_id")

    def __init__(self, table: JobTable, job_id: str, row: int) -> None:
        self._table, self.job_id, self._row = table, job_id, row

    @property
    def spec(self) -> JobSpec | None:
        """The newest version of the definition known."""
        return self._table.spec(self._row, self.job_id)

    @property
    def deleted(self) -> bool:
        return bool(self._table._deleted[self._row])

    @deleted.setter
    def deleted(self, value: bool) -> None:
        self._table._deleted[self._row] = 1 if value else 0

    @property
    def last_success_ms(self) -> int | None:
        return _known(self._table._success_ms[self._row])

    @property
    def last_success_slot(self) -> int | None:
        return _known(self._table._success_slot[self._row])

    def succeeded(self, at: int, slot: int) -> None:
        """The newest success (by event time; on a tie, the later slot): a max, any order."""
        table, row = self._table, self._row
        current = table._success_ms[row]
        before = table._success_slot[row]
        if current == NONE or at > current:
            table._success_ms[row], table._success_slot[row] = at, slot
        elif at == current:
            table._success_slot[row] = max(slot, table._success_slot[row])
        if table._success_slot[row] != before:
            table._run_ms[row] = -1  # another slot's run: known once its lease and success are

    def ran(self, slot: int, took_ms: int) -> None:
        """A run of `slot` whose lease and success are both known took `took_ms`."""
        table, row = self._table, self._row
        if slot == table._success_slot[row]:
            table._run_ms[row] = max(0, min(took_ms, 2**31 - 1))

    def newest_run(self) -> tuple[int, int, int, int] | None:
        """The last success's run as `last_run` gives it, from the compact columns: (slot,
        attempt 0 — not kept —, leased, succeeded), None when its length is not known."""
        table, row = self._table, self._row
        took, slot, at = table._run_ms[row], table._success_slot[row], table._success_ms[row]
        if took < 0 or slot == NONE or at == NONE:
            return None
        return (slot, 0, at - took, at)

    @property
    def partition(self) -> int | None:
        partition = self._table._partition[self._row]
        return None if partition < 0 else partition

    @partition.setter
    def partition(self, value: int | None) -> None:
        self._table._partition[self._row] = -1 if value is None else value

    @property
    def slots(self) -> Mapping[int, SlotFacts]:
        """The slots in flight (those after the last success that anything was seen of)."""
        return self._table.slots.get(self.job_id, _EMPTY)

    def slot(self, slot: int) -> SlotFacts:
        """One slot's facts, made on first sight."""
        slots = self._table.slots.get(self.job_id)
        if slots is None:
            slots = self._table.slots[self.job_id] = {}
        facts = slots.get(slot)
        if facts is None:
            facts = slots[slot] = SlotFacts()
        return facts

    def forget_slots_through(self, done: int) -> None:
        slots = self._table.slots.get(self.job_id)
        if slots is None:
            return
        for slot in [s for s in slots if s <= done]:
            del slots[slot]
        if not slots:
            del self._table.slots[self.job_id]

    @property
    def last_run(self) -> tuple[int, int, int, int] | None:
        """The newest slot whose run's length is known: (slot, attempt, leased, succeeded)."""
        return self._table.last_runs.get(self.job_id)

    @last_run.setter
    def last_run(self, value: tuple[int, int, int, int] | None) -> None:
        if value is None:
            self._table.last_runs.pop(self.job_id, None)
        else:
            self._table.last_runs[self.job_id] = value

    def _history(self) -> Mapping[int, tuple[bool, int]]:
        kept = self._table.history.get(self.job_id)
        if kept is not None:
            return kept
        spec = self.spec
        return {} if spec is None else {spec.version: (spec.enabled, spec.updated_at_ms)}

    def resumed_at_ms(self) -> int | None:
        """When the current run of enabled versions began after a disabled one, if known."""
        if self.job_id not in self._table.history:
            return None  # one version known: nothing before it to have resumed from
        versions = self._history()
        if not versions:
            return None
        version = max(versions)
        if not versions[version][0]:
            return None
        while version - 1 in versions and versions[version - 1][0]:
            version -= 1
        before = versions.get(version - 1)
        return versions[version][1] if before is not None else None

    def disabled_since_ms(self) -> int | None:
        """When the current run of disabled versions began (as far as the versions kept
        tell), or None while the job is enabled."""
        versions = self._history()
        if not versions:
            return None
        version = max(versions)
        if versions[version][0]:
            return None
        while version - 1 in versions and not versions[version - 1][0]:
            version -= 1
        return versions[version][1]
