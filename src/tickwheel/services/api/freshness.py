"""How fresh a read from a followed topic must be, and the end offsets that prove it
(decision 0139).

The API answers reads from topics it follows in memory (job definitions, the workflow
topics). A follower alone cannot say it has seen a write: only the partition's end offset,
asked of the broker *after* the write was acknowledged, can. Decision 0070 asked one such
end per read (a broker round trip in every answer, 100-400 ms at p99 on a loaded machine).
Here a read says which earlier end it may reuse:

- a write this API instance made is seen by every read that begins after it was
  acknowledged: such a read needs an end whose request was sent after the write's
  acknowledgement (requests are numbered per partition, so the order is exact);
- any other write (another instance, the SDK, the CLI) is seen by every read that begins
  `window_s` or more after it was acknowledged: an end asked within the window is reused.

One end per partition is asked at a time, for every read waiting (decision 0100's group
commit), and once an answer is half a window old (sooner when the broker is slow to answer)
the next read asks for a new one in the background, so under a steady load no read waits for
the broker while it answers within half the window. `window_s` 0 is decision
0070's rule (an end asked after the read began, for every read).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from tickwheel.adapters.kafka.follower import Place, TopicFollower
from tickwheel.errors import InvalidInput

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
DEFAULT_WINDOW_MS = 1000
MAX_WINDOW_MS = 10_000


def window_from_env(environ: dict[str, str]) -> float:
    """`TICKWHEEL_API_READ_WINDOW_MS` (0-10000, default 1000) in seconds."""
    text = environ.get("TICKWHEEL_API_READ_WINDOW_MS", str(DEFAULT_WINDOW_MS))
    if not text.isdigit() or int(text) > MAX_WINDOW_MS:
        raise InvalidInput(
            "TICKWHEEL_API_READ_WINDOW_MS",
            f"{text!r}; accepted: whole milliseconds from 0 to {MAX_WINDOW_MS}",
        )
    return int(text) / 1000


@dataclass
class _Round:
    """One end request: when it was sent, and its answer once it came."""

    started: float
    number: int  # requests begun for the partition before it, plus one
    answer: int | BaseException | None = None
    done: bool = False


class RecentEnds(Generic[K]):
    """The end offset of each partition `K`, asked with `ask`, reused while recent enough."""

    def __init__(
        self,
        ask: Callable[[K], int],
        window_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ask = ask
        self.window_s = window_s
        # Durations between requests, not instants: the monotonic counter, injectable.
        self.monotonic = monotonic
        self.asked = 0  # broker requests sent (for tests and the bench)
        self._cond = threading.Condition()
        self._latest: dict[K, _Round] = {}  # the latest answered request per partition
        self._running: dict[K, _Round] = {}
        self._begun: dict[K, int] = {}
        self._took: dict[K, float] = {}  # how long the latest request per partition took

    def begun(self, key: K) -> int:
        """How many requests for `key` were sent so far: one numbered above it is later."""
        with self._cond:
            return self._begun.get(key, 0)

    def _new_round(self, key: K) -> _Round:
        number = self._begun[key] = self._begun.get(key, 0) + 1
        round_ = self._running[key] = _Round(self.monotonic(), number)
        return round_

    def end(self, key: K, since: float, after: int = 0) -> int:
        """The end of `key` as asked by a request sent at or after `since` and numbered
        above `after` (a `begun` count taken when a write was acknowledged: the order of
        requests and writes, which instants of a coarse counter could tie)."""
        with self._cond:
            while True:
                latest = self._latest.get(key)
                if latest is not None and latest.started >= since and latest.number > after:
                    self._ask_ahead(key, latest)
                    assert isinstance(latest.answer, int)
                    return latest.answer
                running = self._running.get(key)
                if running is None:
                    mine = self._new_round(key)
                    break
                while not running.done:
                    self._cond.wait()
                if (
                    isinstance(running.answer, BaseException)
                    and running.started >= since
                    and running.number > after
                ):
                    raise running.answer  # the request this read waited for failed
        self._answer(key, mine)
        if isinstance(mine.answer, BaseException):
            raise mine.answer
        assert mine.answer is not None
        return mine.answer

    def _answer(self, key: K, round_: _Round) -> None:
        answer: int | BaseException
        try:
            answer = self.ask(key)
        except BaseException as exc:  # every read waiting on this request gets it
            answer = exc
        with self._cond:
            self.asked += 1
            self._took[key] = self.monotonic() - round_.started
            round_.answer, round_.done = answer, True
            del self._running[key]
            latest = self._latest.get(key)
            if not isinstance(answer, BaseException) and (
                latest is None or round_.number > latest.number
            ):
                self._latest[key] = round_
            self._cond.notify_all()

    def _ask_ahead(self, key: K, latest: _Round) -> None:
        """Holding the condition: once the answer is half a window old (or sooner, when the
        broker takes longer than a quarter of the window to answer: twice its latest time
        before the window ends), ask the next one in the background, so the reads after it
        find a fresh one instead of waiting for it."""
        now = self.monotonic()
        if self.window_s <= 0:
            return
        ahead = min(self.window_s / 2, self.window_s - 2 * self._took.get(key, 0.0))
        if now - latest.started < ahead:
            return
        if key in self._running:
            return
        round_ = self._new_round(key)
        threading.Thread(
            target=self._answer, args=(key, round_), name="ends-ahead", daemon=True
        ).start()


class Freshness(Generic[K]):
    """The rule of decision 0139 over `RecentEnds`: what a read must have seen."""

    def __init__(
        self,
        ask: Callable[[K], int],
        window_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ends = RecentEnds(ask, window_s, monotonic)
        self.window_s = window_s
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._written: dict[K, int] = {}  # per partition: requests begun at the latest own write

    def wrote(self, key: K) -> None:
        """This instance's write to `key` was acknowledged (or may have been): every read
        that begins from now on must see it, so it needs an end asked from now on."""
        begun = self.ends.begun(key)
        with self._lock:
            self._written[key] = max(self._written.get(key, 0), begun)

    def end(self, key: K) -> int:
        """Where `key` ended recently enough for a read beginning now."""
        with self._lock:
            after = self._written.get(key, 0)
        return self.ends.end(key, self.monotonic() - self.window_s, after)


class FreshReads:
    """A `TopicFollower`'s reads, fresh by decision 0139's rule: each wanted partition's end
    offset comes from `Freshness` (this instance's writes at once, anyone's within the
    window), so a read costs no broker round trip while the ends are fresh."""

    def __init__(
        self,
        follower: TopicFollower,
        window_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.follower = follower
        self.freshness: Freshness[Place] = Freshness(follower.end, window_s, monotonic)

    def read(self, places: Iterable[Place], view: Callable[[], T]) -> T:
        """`view()` once the follower has passed a recent enough end of every place."""
        return self.follower.read({place: self.freshness.end(place) for place in places}, view)

    def wrote(self, place: Place) -> None:
        """This instance wrote to `place`: the next read of it must see that write."""
        self.freshness.wrote(place)
