"""Back-pressure for one lane: a lane that stays full stops fetching (it pauses its partitions)
and resumes once it has room, keeping its place in the consumer group all along (it still
polls while paused, for rebalances and liveness). Short blips only skip a poll."""

from __future__ import annotations

import logging

from tickwheel.adapters.kafka.client import Consumer, TopicPartition

log = logging.getLogger("tickwheel.worker")

PAUSE_AFTER_S = 0.5  # full for this long: pause fetching (short blips only stop consuming)


class PullControl:
    """Pauses and resumes the lane's partitions; touched only on the lane's thread (and in
    its rebalance callbacks, which run there too)."""

    def __init__(self, consumer: Consumer, priority: str) -> None:
        self.consumer = consumer
        self.priority = priority
        self.pausing = False
        self._paused: list[TopicPartition] = []
        self._full_since: float | None = None

    def has_room(self) -> None:
        """The lane can take more: fetch again if it had stopped."""
        self._full_since = None
        if self.pausing:
            self.pausing = False
            if self._paused:
                self.consumer.resume(self._paused)
            self._paused = []
            log.info("pulling again", extra={"action": "lane_resumed", "priority": self.priority})

    def is_full(self, now: float) -> bool:
        """The lane has no room at `now` (monotonic seconds); True once it has been full long
        enough that its partitions are now paused."""
        self._full_since = self._full_since or now
        if now - self._full_since < PAUSE_AFTER_S:
            return False
        if not self.pausing:
            self.pausing = True
            self._paused = list(self.consumer.assignment())
            if self._paused:
                self.consumer.pause(self._paused)
            log.info(
                "pool full; stopped pulling",
                extra={"action": "lane_paused", "priority": self.priority},
            )
        return True

    def assigned(self, partitions: list[TopicPartition]) -> None:
        """Partitions assigned while paused start paused too."""
        if self.pausing:
            self.consumer.pause(partitions)
            self._paused.extend(partitions)

    def revoked(self, partitions: set[int]) -> None:
        self._paused = [tp for tp in self._paused if tp.partition not in partitions]
