"""`SharedEnds`: one watermark request for every reader waiting, and never an answer asked
before the reader arrived (a read must see every write acknowledged before it began)."""

from __future__ import annotations

import threading

import pytest

from tickwheel.adapters.kafka.follower import SharedEnds

WAIT_S = 10


class GatedAsk:
    """An `ask` whose requests are released one by one; each answers its own number."""

    def __init__(self) -> None:
        self.started = 0
        self.begun = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.fail_next = False

    def __call__(self, partition: int) -> int:
        self.started += 1
        number = self.started
        self.begun.release()
        assert self.release.acquire(timeout=WAIT_S)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError(f"request {number} failed")
        return number


def _call(ends: SharedEnds, results: list[object]) -> threading.Thread:
    def run() -> None:
        try:
            results.append(ends.end(0))
        except RuntimeError as exc:
            results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _waiting(ends: SharedEnds, count: int) -> None:
    """Until `count` callers wait on the condition (bounded)."""
    for _ in range(WAIT_S * 100):
        with ends._cond:
            if len(ends._cond._waiters) >= count:  # type: ignore[attr-defined]
                return
        threading.Event().wait(0.01)
    pytest.fail(f"{count} callers never waited")


def test_readers_arriving_during_a_request_share_the_next_one_not_the_one_in_flight() -> None:
    ask = GatedAsk()
    ends = SharedEnds(ask)
    first: list[object] = []
    leader = _call(ends, first)
    assert ask.begun.acquire(timeout=WAIT_S)  # request 1 is in flight
    later: list[object] = []
    followers = [_call(ends, later) for _ in range(5)]
    _waiting(ends, 5)
    ask.release.release()  # request 1 answers: only the leader may take it
    leader.join(WAIT_S)
    assert first == [1]
    assert ask.begun.acquire(timeout=WAIT_S)  # one of the five asks request 2 for all
    ask.release.release()
    for thread in followers:
        thread.join(WAIT_S)
    assert later == [2] * 5
    assert ask.started == 2, "the five waiting readers made one request between them"


def test_a_failed_request_fails_every_reader_of_its_round_and_the_next_one_asks_again() -> None:
    ask = GatedAsk()
    ends = SharedEnds(ask)
    ask.fail_next = True
    results: list[object] = []
    thread = _call(ends, results)
    assert ask.begun.acquire(timeout=WAIT_S)
    ask.release.release()
    thread.join(WAIT_S)
    assert isinstance(results[0], RuntimeError)
    again: list[object] = []
    thread = _call(ends, again)
    assert ask.begun.acquire(timeout=WAIT_S)
    ask.release.release()
    thread.join(WAIT_S)
    assert again == [2]
