"""Decision 0139's rule for reads from followed topics, with a fake broker and a fake
monotonic counter: which end offset a read may use, and how many requests that costs."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tickwheel.errors import InvalidInput
from tickwheel.services.api.freshness import Freshness, RecentEnds, window_from_env


class Ticks:
    """A monotonic counter the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counting(ends: dict[int, int]) -> tuple[Callable[[int], int], list[int]]:
    asked: list[int] = []

    def ask(partition: int) -> int:
        asked.append(partition)
        return ends[partition]

    return ask, asked


def test_an_end_asked_within_the_window_is_reused_and_an_older_one_is_not() -> None:
    ticks = Ticks()
    ends = {0: 5, 1: 9}
    ask, asked = counting(ends)
    fresh = Freshness(ask, window_s=0.1, monotonic=ticks)
    assert fresh.end(0) == 5 and asked == [0]
    ends[0] = 7  # written by somebody else
    ticks.now += 0.04  # within the window (and under half of it: no ask ahead either)
    assert fresh.end(0) == 5 and asked == [0]
    assert fresh.end(1) == 9 and asked == [0, 1]  # each partition has its own end
    ticks.now += 0.07  # the first answer is now older than the window
    assert fresh.end(0) == 7 and asked == [0, 1, 0]


def test_an_own_write_is_seen_by_the_next_read_however_wide_the_window() -> None:
    ticks = Ticks()
    ends = {0: 5}
    ask, asked = counting(ends)
    fresh = Freshness(ask, window_s=60.0, monotonic=ticks)
    assert fresh.end(0) == 5
    ticks.now += 0.001
    ends[0] = 6
    fresh.wrote(0)  # this instance's write, acknowledged at ends[0] - 1
    ticks.now += 0.001
    assert fresh.end(0) == 6 and asked == [0, 0]
    assert fresh.end(0) == 6 and asked == [0, 0]  # and that end serves the reads after it


def test_window_zero_asks_for_every_read() -> None:
    ticks = Ticks()
    ask, asked = counting({0: 1})
    fresh = Freshness(ask, window_s=0.0, monotonic=ticks)
    for _ in range(3):
        ticks.now += 0.001
        fresh.end(0)
    assert asked == [0, 0, 0]


def test_a_half_window_old_end_is_renewed_in_the_background_while_reads_use_it() -> None:
    ticks = Ticks()
    ends = {0: 3}
    renewed = threading.Event()

    def ask(partition: int) -> int:
        if ticks.now > 100.0:
            renewed.set()
        return ends[partition]

    ends_ = RecentEnds(ask, window_s=0.1, monotonic=ticks)
    assert ends_.end(0, since=ticks.now) == 3
    ends[0] = 4
    ticks.now += 0.06  # past half the window: served as is, the next one asked ahead
    assert ends_.end(0, since=ticks.now - 0.1) == 3
    assert renewed.wait(5.0)
    deadline = threading.Event()
    for _ in range(100):  # bounded: the background answer lands within a few polls
        if ends_.end(0, since=ticks.now - 0.1) == 4:
            break
        deadline.wait(0.05)
    assert ends_.end(0, since=ticks.now - 0.1) == 4
    assert ends_.asked == 2


def test_reads_arriving_together_share_one_request() -> None:
    ticks = Ticks()
    release = threading.Event()
    calls: list[int] = []

    def slow_ask(partition: int) -> int:
        calls.append(partition)
        release.wait(5.0)
        return 42

    ends = RecentEnds(slow_ask, window_s=0.1, monotonic=ticks)
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(ends.end(0, ticks.now)))
               for _ in range(8)]  # fmt: skip
    for thread in threads:
        thread.start()
    for _ in range(100):  # bounded wait until the first request is in flight
        if calls:
            break
        release.wait(0.01)
    release.set()
    for thread in threads:
        thread.join(5.0)
    assert answers == [42] * 8
    assert calls == [0]


def test_a_failed_request_fails_its_reads_and_the_next_read_asks_again() -> None:
    ticks = Ticks()
    failures = [RuntimeError("broker away")]

    def ask(partition: int) -> int:
        if failures:
            raise failures.pop()
        return 8

    fresh = Freshness(ask, window_s=0.1, monotonic=ticks)
    with pytest.raises(RuntimeError, match="broker away"):
        fresh.end(0)
    assert fresh.end(0) == 8  # the failure was not kept as an answer


@pytest.mark.parametrize("text", ["-1", "abc", "10001", "1.5"])
def test_a_bad_window_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(InvalidInput, match="TICKWHEEL_API_READ_WINDOW_MS"):
        window_from_env({"TICKWHEEL_API_READ_WINDOW_MS": text})


def test_the_window_defaults_to_one_second() -> None:
    assert window_from_env({}) == 1.0
    assert window_from_env({"TICKWHEEL_API_READ_WINDOW_MS": "0"}) == 0.0


def test_an_own_write_orders_by_request_not_by_instant_when_the_counter_ties() -> None:
    ticks = Ticks()  # never moves: a request and a write at the same instant
    ends = {0: 5}
    ask, asked = counting(ends)
    fresh = Freshness(ask, window_s=1.0, monotonic=ticks)
    assert fresh.end(0) == 5
    ends[0] = 6
    fresh.wrote(0)
    assert fresh.end(0) == 6 and asked == [0, 0]


def test_a_slow_broker_is_asked_ahead_sooner_than_half_a_window() -> None:
    ticks = Ticks()
    asked: list[float] = []
    answered = threading.Event()

    def slow(partition: int) -> int:
        asked.append(ticks.now)
        if len(asked) == 1:
            ticks.now += 0.3  # the first request takes 0.3 s of a 1 s window
        else:
            answered.set()
        return 1

    ends = RecentEnds(slow, window_s=1.0, monotonic=ticks)
    ends.end(0, since=ticks.now)
    ticks.now += 0.15  # 0.45 s old: under half the window, but past 1 - 2 * 0.3 = 0.4
    assert ends.end(0, since=ticks.now - 1.0) == 1
    assert answered.wait(5.0)  # asked ahead in the background
    assert len(asked) == 2
