"""Reads the newest record time of the output topics jobs declare (`freshness`), for the
evaluator's `output_stale`: the watchdog looks at the output itself, not at what the
scheduler or the worker said about it.

Every `every_ms` the probe reads, per partition of each topic, the record just before the
end (stepping back over transaction markers a few offsets at most) and keeps the newest
timestamp. A topic that does not exist (yet) is left out, so nothing is judged on it.
"""

from __future__ import annotations

import logging

from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.reader import watermarks

log = logging.getLogger("tickwheel.watchdog")

# How far back from a partition's end to look for a record (a transactional producer's
# commit markers occupy offsets too).
STEP_BACK = 8


class FreshnessProbe:
    def __init__(self, bootstrap: str, group: str, every_ms: int) -> None:
        self.every_ms = every_ms
        self.consumer = Consumer(consumer_config(f"{group}-freshness-unused", bootstrap))
        self.newest: dict[str, int | None] = {}
        self._next_at = 0

    def refresh(self, topics: set[str], now_ms: int) -> None:
        if now_ms < self._next_at or not topics:
            return
        self._next_at = now_ms + self.every_ms
        for topic in sorted(topics):
            try:
                found = self._newest(topic)
            except KafkaException as exc:
                log.warning(
                    f"freshness: cannot read {topic}: {exc}",
                    extra={"action": "freshness_unreadable", "topic": topic},
                )
                continue
            if found is None:
                self.newest.pop(topic, None)
            else:
                self.newest[topic] = found[0]
        for gone in set(self.newest) - topics:
            del self.newest[gone]

    def _newest(self, topic: str) -> tuple[int | None] | None:
        """(newest timestamp or None when empty,), or None when the topic does not exist."""
        metadata = self.consumer.list_topics(topic, timeout=5).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            return None
        best: int | None = None
        for partition in sorted(metadata.partitions):
            low, high = watermarks(self.consumer, TopicPartition(topic, partition), within_s=5)
            for offset in range(high - 1, max(low, high - STEP_BACK) - 1, -1):
                self.consumer.assign([TopicPartition(topic, partition, offset)])
                messages = self.consumer.consume(1, 2.0)
                if messages and messages[0].error() is None:
                    stamp = messages[0].timestamp()[1]
                    best = stamp if best is None else max(best, stamp)
                    break
        self.consumer.unassign()
        return (best,)

    def close(self) -> None:
        self.consumer.close()
