"""A paused job's definition versions the watchdog keeps past compaction (decision 0190):
which jobs' are kept, their record, tombstones for a deleted job's, what a restore reads of
the state topic, and a restore that folds them as a replay of every version does."""

from __future__ import annotations

import itertools

from tests.unit.core.watchdog.test_watchdog_golden import T0, S, definition, event
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.watchdog import Observed, WatchdogState
from tickwheel.services.watchdog.records import checkpoint_record, compacted
from tickwheel.services.watchdog.remembered import (
    SUCCESS_PREFIX,
    VERSIONS_PREFIX,
    forgotten_keys,
    parse_versions,
    versions_record,
    versions_to_remember,
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
    kept = dict(versions_to_remember(state.facts.jobs, jobs))
    assert sorted(kept) == ["paused", "resumed"]
    assert kept["resumed"] == {1: (True, T0), 2: (False, T0 + 10 * S), 3: (True, T0 + 90 * S)}


def test_a_deleted_job_has_its_kept_facts_tombstoned_and_a_recreated_one_not() -> None:
    state = folded(*paused_and_resumed("gone"), event("gone", T0, "succeeded", T0 + 5 * S),
                   Observed("definition", "gone", None),
                   *paused_and_resumed("back"), Observed("definition", "back", None),
                   definition("back", WEEKLY), definition("kept", WEEKLY))  # fmt: skip
    jobs = state.facts.jobs
    assert list(forgotten_keys(jobs, {"gone", "back", "kept", "unknown"})) == [
        SUCCESS_PREFIX + "gone", VERSIONS_PREFIX + "gone"]  # fmt: skip
    assert list(versions_to_remember(jobs, {"gone"})) == []


def record(key: str | None, value: bytes | None, offset: int) -> Record:
    return Record("watchdog.state", 0, offset, key, value, T0)


def test_a_restore_reads_what_compaction_leaves_the_last_value_of_each_key() -> None:
    log = [record("a", b"1", 0), record("b", b"1", 1), record("a", b"2", 2),
           record("b", None, 3), record(None, b"x", 4), record("c", b"1", 5),
           record("b", b"3", 6), record("c", None, 7)]  # fmt: skip
    assert compacted(log) == [b"2", b"3"]


def test_kept_versions_and_a_replay_of_what_is_left_give_a_replay_of_every_version() -> None:
    every = paused_and_resumed("j")
    expected = folded(*every).facts.job("j").resumed_at_ms()
    assert expected == T0 + 90 * S
    kept = dict(versions_to_remember(folded(*every).facts.jobs, {"j"}))["j"]
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
    kept = dict(versions_to_remember(folded(*every).facts.jobs, {"j"}))["j"]
    for order in itertools.permutations(range(3)):
        state = WatchdogState()
        for step in order:
            if step == 0:
                state.facts.jobs.remember_versions("j", kept)
            else:
                state.apply(every[step])
        assert state.facts.job("j").resumed_at_ms() == T0 + 90 * S, order
