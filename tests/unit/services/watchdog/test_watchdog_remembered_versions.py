"""A paused job's definition versions the watchdog keeps past compaction (decision 0190):
which jobs' are kept, their record, tombstones for a deleted job's, and a restore that folds
them as a replay of every version does."""

from __future__ import annotations

import itertools

from tests.unit.core.watchdog.test_watchdog_golden import T0, S, definition, event
from tickwheel.core.watchdog import Observed, WatchdogState
from tickwheel.services.watchdog.records import checkpoint_record
from tickwheel.services.watchdog.remembered import (
    SUCCESS_PREFIX,
    VERSIONS_PREFIX,
    KeptFacts,
    held_versions,
    parse_versions,
    versions_record,
)

WEEKLY = "0 0 * * 0"


def folded(*observed: Observed) -> WatchdogState:
    state = WatchdogState()
    for item in observed:
        state.apply(item)
    return state


def paused_and_resumed(job_id: str) -> list[Observed]:
    return [
        definition(job_id, WEEKLY, emi="9d"),
        definition(job_id, WEEKLY, emi="9d", version=2, enabled=False, updated=T0 + 10 * S),
        definition(job_id, WEEKLY, emi="9d", version=3, enabled=True, updated=T0 + 90 * S),
    ]


def test_kept_versions_read_back_as_they_were_written() -> None:
    versions = {1: (True, T0), 2: (False, T0 + 10 * S), 3: (True, T0 + 90 * S)}
    assert parse_versions(versions_record("job/odd:id", versions, T0)) == ("job/odd:id", versions)
    assert parse_versions(checkpoint_record({"t:0": 5}, T0, T0)) is None


def test_only_jobs_with_a_disabled_version_have_their_versions_kept() -> None:
    edited = [definition("edited", WEEKLY, emi="9d", version=v, updated=T0 + v * S)
              for v in (1, 2)]  # fmt: skip
    paused = definition("paused", WEEKLY, emi="9d", version=2, enabled=False, updated=T0 + S)
    state = folded(*paused_and_resumed("resumed"), *edited, definition("paused", WEEKLY), paused,
                   definition("once", WEEKLY))  # fmt: skip
    jobs = {"resumed", "edited", "paused", "once", "unknown"}
    kept = {j: v for j in jobs if (v := held_versions(state.facts.jobs, j)) is not None}
    assert sorted(kept) == ["paused", "resumed"]
    assert kept["resumed"] == {1: (True, T0), 2: (False, T0 + 10 * S), 3: (True, T0 + 90 * S)}


class Watchdog:
    """The service's side of kept facts: definitions and successes folded, then a transaction's
    writes (what `WatchdogService._consume` and `_commit` do with `KeptFacts`)."""

    def __init__(self) -> None:
        self.state = WatchdogState()
        self.kept = KeptFacts()

    def fold(self, *observed: Observed) -> None:
        for item in observed:
            self.state.apply(item)
            if item.kind == "definition":
                self.kept.redefined.add(item.key)
            elif item.kind == "event" and item.record is not None:
                self.kept.succeeded.add(item.key)

    def commit(self, caught_up: bool = True) -> dict[str, str | None]:
        """key → the kind of record written, None for a tombstone."""
        writes = self.kept.writes(self.state.facts.jobs, 0, T0, caught_up)
        self.kept.committed()
        return {key: None if record is None else record["kind"] for key, record in writes}


def deleted(job_id: str) -> Observed:
    return Observed("definition", job_id, None)


def test_a_paused_jobs_versions_are_written_and_tombstoned_once_it_is_deleted() -> None:
    watchdog = Watchdog()
    watchdog.fold(*paused_and_resumed("gone"), event("gone", T0, "succeeded", T0 + 5 * S))
    assert watchdog.commit() == {SUCCESS_PREFIX + "gone": "watchdog_last_success",
                                 VERSIONS_PREFIX + "gone": "watchdog_job_versions"}  # fmt: skip
    watchdog.fold(deleted("gone"))
    assert watchdog.commit() == {VERSIONS_PREFIX + "gone": None, SUCCESS_PREFIX + "gone": None}
    watchdog.fold(deleted("never-known"))
    assert watchdog.commit() == {SUCCESS_PREFIX + "never-known": None}


def test_a_delete_and_re_create_in_one_transaction_tombstones_the_old_versions() -> None:
    # Versions start again at 1: the old job's, merged into the new one's on a restore, would
    # say an enabled job is paused.
    watchdog = Watchdog()
    watchdog.fold(*paused_and_resumed("back"))
    assert VERSIONS_PREFIX + "back" in watchdog.commit()
    watchdog.fold(deleted("back"), definition("back", WEEKLY))
    assert watchdog.commit() == {VERSIONS_PREFIX + "back": None}


def test_versions_all_enabled_again_are_tombstoned() -> None:
    # A second writer's version 2 (enabled) replaced the disabled one the record holds.
    watchdog = Watchdog()
    watchdog.fold(definition("j", WEEKLY),
                  definition("j", WEEKLY, version=2, enabled=False, updated=T0 + S))  # fmt: skip
    assert watchdog.commit() == {VERSIONS_PREFIX + "j": "watchdog_job_versions"}
    watchdog.state.facts.jobs.history["j"][2] = (True, T0 + 2 * S)  # the later writer's v2
    watchdog.fold(definition("j", WEEKLY, version=3, updated=T0 + 3 * S))
    assert watchdog.commit() == {VERSIONS_PREFIX + "j": None}


def test_a_replayed_delete_is_tombstoned_only_once_caught_up_and_only_if_still_deleted() -> None:
    # A replay folds an old delete, commits, then folds the re-create that followed it: a
    # success tombstone in between would drop the live job's kept success for good.
    watchdog = Watchdog()
    watchdog.state.facts.job("j").succeeded(T0 + 5 * S, T0)  # restored from `success/j`
    watchdog.fold(definition("j", WEEKLY), deleted("j"))
    assert SUCCESS_PREFIX + "j" not in watchdog.commit(caught_up=False)
    watchdog.fold(definition("j", WEEKLY))
    assert SUCCESS_PREFIX + "j" not in watchdog.commit(caught_up=True)
    watchdog.fold(deleted("other"))
    assert watchdog.commit(caught_up=False) == {}
    assert watchdog.commit(caught_up=True) == {SUCCESS_PREFIX + "other": None}


def test_kept_versions_make_a_row_the_deadline_wheel_can_read() -> None:
    state = WatchdogState()
    state.facts.jobs.remember_versions("j", {1: (True, T0), 2: (False, T0 + S)})
    assert "j" in state.facts.jobs and state.facts.job("j").spec is None


def test_kept_versions_and_a_replay_of_what_is_left_give_a_replay_of_every_version() -> None:
    every = paused_and_resumed("j")
    expected = folded(*every).facts.job("j").resumed_at_ms()
    assert expected == T0 + 90 * S
    kept = held_versions(folded(*every).facts.jobs, "j")
    assert kept is not None
    # The restore folds the kept versions first; the replay then sees whatever compaction left
    # of the definitions, in their order: the newest alone, or more of them.
    for left in ([every[-1]], every[1:], every):
        state = WatchdogState()
        state.facts.jobs.remember_versions("j", kept)
        for item in left:
            state.apply(item)
        job = state.facts.job("j")
        assert job.resumed_at_ms() == expected and job.disabled_since_ms() is None
        assert job.spec is not None and job.spec.version == 3


def test_kept_versions_fold_in_any_order_with_the_versions_replayed() -> None:
    every = paused_and_resumed("j")
    kept = held_versions(folded(*every).facts.jobs, "j")
    assert kept is not None
    for order in itertools.permutations(range(3)):
        state = WatchdogState()
        for step in order:
            if step == 0:
                state.facts.jobs.remember_versions("j", kept)
            else:
                state.apply(every[step])
        assert state.facts.job("j").resumed_at_ms() == T0 + 90 * S, order
