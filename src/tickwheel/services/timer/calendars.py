"""The timer follows the holiday calendars (docs/schedules.md §5, decision 0079).

Every timer process reads the whole `calendars` topic (one partition, compacted) with its own
consumer: to its end on a thread as the process starts, then whatever arrives, each loop. The
calendars it knows are one `CalendarBook`, shared by all its partitions; `entry_from_definition`
compiles each job that names a calendar with it. When the book changes, every job whose
compiled schedule is no longer the one the book gives is fed its own definition again
(`PartitionTimer.apply_definition`): its walk goes on from its last slot, so the change takes
effect from the next materialised slot, and the new timer state is written in the partition's
next transaction. A job naming a calendar the book lacks has no slot until it arrives.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from tickwheel.core.calendars import BusinessCalendar, calendar_from_record
from tickwheel.records import Calendar

if TYPE_CHECKING:
    from tickwheel.adapters.kafka.client import TopicPartition
    from tickwheel.core.timer.partition import PartitionScheduler
    from tickwheel.core.timer.writes import PartitionWrites
    from tickwheel.ports.kafka import KafkaClients, KafkaMessage, PartitionReader, ReadRecord
    from tickwheel.services.timer.runtime import PartitionRuntime

log = logging.getLogger("tickwheel.timer")

# How long a timer waits at start for the calendars topic to be read to its end.
LOAD_TIMEOUT_S = 60.0


class CalendarBook:
    """The calendars one process knows, by name; replaced whole on each change, so a reader
    on another thread (a restore) sees one version or the next, never half of one."""

    def __init__(self) -> None:
        self._known: Mapping[str, BusinessCalendar] = MappingProxyType({})
        self.generation = 0

    @property
    def known(self) -> Mapping[str, BusinessCalendar]:
        return self._known

    def put(self, name: str, calendar: BusinessCalendar | None) -> bool:
        """Set (or, with None, remove) one calendar; whether anything changed."""
        if self._known.get(name) == calendar:
            return False
        known = dict(self._known)
        if calendar is None:
            known.pop(name, None)
        else:
            known[name] = calendar
        self._known = MappingProxyType(known)
        self.generation += 1
        return True


# One book per timer process: its partitions, and their restores, share the calendars.
CALENDARS = CalendarBook()


def reapply(timer: PartitionScheduler, book: CalendarBook, now_ms: int) -> PartitionWrites:
    """Recompile, from their own definitions, the jobs of one partition whose calendar the book
    now gives differently; what that decides (states, catch-up) is returned to be written."""
    from tickwheel.core.record_schedule import compile_record_schedule
    from tickwheel.core.timer.writes import PartitionWrites

    emission = PartitionWrites()
    for job in list(timer.jobs.values()):
        source = job.calendar_source
        if source is None or compile_record_schedule(source, book.known) == job.schedule:
            continue
        emission.extend(timer.apply_definition(job.job_id, source, now_ms))
        log.info(
            "job follows a changed calendar",
            extra={
                "action": "calendar_applied",
                "job_id": job.job_id,
                "calendar": source.get("calendar"),
                "partition": timer.partition,
            },
        )
    return emission


class CalendarFollower:
    """Reads the calendars topic into a book, and brings each owned partition up to it."""

    def __init__(
        self,
        clients: KafkaClients[TopicPartition],
        reader: PartitionReader,
        topic: str | None = None,
        book: CalendarBook = CALENDARS,
        dead_letter: Callable[[ReadRecord, Exception], None] | None = None,
    ) -> None:
        from tickwheel.topology import topic_name

        self.topic = topic or topic_name("calendars")
        self.book = book
        self.dead_letter = dead_letter
        self.reader = reader  # where the topic ends
        # No group: every timer reads every calendar, and no offset is ever committed.
        self.consumer = clients.consumer(f"tickwheel-timer-calendars-{uuid.uuid4()}")
        self._applied: dict[int, tuple[int, int]] = {}  # partition -> (runtime id, generation)
        self._loader: threading.Thread | None = None
        self._closing = False

    def start(self) -> None:
        """Read the topic to its end on a thread of its own, so the timer's start (and its
        first restores) waits for nothing: until it is read, jobs naming a calendar have no
        slot, and `follow` applies each one as soon as its calendar arrives (a slot due
        meanwhile fires a moment late, never on a day its calendar forbids)."""
        self._loader = threading.Thread(target=self.load, name="calendars", daemon=True)
        self._loader.start()

    def load(self, timeout_s: float = LOAD_TIMEOUT_S) -> None:
        """Read the topic to its end (then `poll` takes over)."""
        from tickwheel.adapters.kafka.client import OFFSET_BEGINNING, TopicPartition

        _, high = self.reader.watermarks(self.topic, 0)
        self.consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        position = 0
        while position < high and time.monotonic() < deadline and not self._closing:
            for msg in self.consumer.consume(500, 0.5):
                if not msg.error():
                    self._apply(msg)
                    position = (msg.offset() or 0) + 1
        log.info(
            "calendars read",
            extra={
                "action": "calendars_loaded",
                "calendars": len(self.book.known),
                "complete": position >= high,
            },
        )

    def poll(self) -> bool:
        """Apply what arrived since the last call (never waits); whether the book changed."""
        if self._loader is not None and self._loader.is_alive():
            return False  # the loader has the consumer until the topic's end
        changed = False
        for msg in self.consumer.consume(100, 0):
            if not msg.error():
                changed = self._apply(msg) or changed
        return changed

    def _apply(self, msg: KafkaMessage) -> bool:
        from tickwheel.adapters.avro import UndecodableRecord, decode
        from tickwheel.adapters.kafka.reader import record_of

        record = record_of(msg)
        if record.key is None or not record.key_is_text:
            return False
        try:
            calendar = None
            if record.value is not None:
                value = cast(Calendar, decode(record.value, "Calendar")[1])  # the boundary
                calendar = calendar_from_record(value)
                if calendar.name != record.key:
                    raise ValueError(f"the record key {record.key!r} differs from its name")
        except (UndecodableRecord, ValueError) as exc:
            # The calendar keeps its last good version; the record is dead-lettered once.
            if self.dead_letter is not None:
                self.dead_letter(record, exc)
            return False
        changed = self.book.put(record.key, calendar)
        if changed:
            log.info(
                "calendar changed",
                extra={
                    "action": "calendar_changed",
                    "calendar": record.key,
                    "deleted": calendar is None,
                    "offset": record.offset,
                },
            )
        return changed

    def follow(self, partitions: Mapping[int, PartitionRuntime], now_ms: int) -> None:
        """Bring every owned partition (a newly restored one too) up to the book."""
        generation = self.book.generation
        for partition, runtime in partitions.items():
            if self._applied.get(partition) == (id(runtime), generation):
                continue
            runtime.pending_emission.extend(reapply(runtime.timer, self.book, now_ms))
            self._applied[partition] = (id(runtime), generation)
        for partition in set(self._applied) - set(partitions):
            del self._applied[partition]

    def close(self) -> None:
        self._closing = True
        if self._loader is not None:
            self._loader.join(5.0)
        self.consumer.close()
