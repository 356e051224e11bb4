"""Running the history sink for a test: in this process (`sink_in_thread`) or as a real
subprocess (`SinkProcess`), and waiting until a consumer group has committed everything."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tickwheel.adapters.kafka.client import Consumer, KafkaError, KafkaException, TopicPartition
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.history import (
    OwnerClient,
    read_owner,
)
from tickwheel.services.history.service import HistoryService
from tickwheel.services.history.settings import HistorySinkSettings
from tickwheel.services.history.sink import default_routes


def sink_topics() -> list[str]:
    return sorted(default_routes())


_COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)


def group_caught_up(bootstrap: str, group: str, topics: list[str]) -> bool:
    """True when `group` has committed every record of `topics`.

    A committed offset below the high watermark is not enough to say "behind": on a
    transactional topic the last offsets are commit markers, which take an offset but are no
    record, so a sink that has written everything commits one past its last record and
    stays below the watermark for good. Where the two differ, a `read_committed` reader
    started at the committed offset tells: a record there means behind, the partition's end
    (EOF) with none means caught up."""
    consumer = Consumer(consumer_config(group, bootstrap))
    try:
        metadata = consumer.list_topics(timeout=10)
        partitions = [
            TopicPartition(topic, p) for topic in topics for p in metadata.topics[topic].partitions
        ]
        try:
            answer = consumer.committed(partitions, timeout=10)
        except KafkaException as exc:
            # A group the coordinator does not know yet (NOT_COORDINATOR, COORDINATOR_LOAD_IN_
            # PROGRESS right after the broker or the group started): not caught up, look again.
            if exc.args and exc.args[0].code() in _COORDINATOR_NOT_READY:
                return False
            raise
        committed = {(tp.topic, tp.partition): tp.offset for tp in answer}
        unsure: list[TopicPartition] = []
        for tp in partitions:
            _low, high = consumer.get_watermark_offsets(tp, timeout=10)
            offset = committed[(tp.topic, tp.partition)]
            if high <= 0 or offset >= high:
                continue
            if offset < 0:
                return False  # records there, and nothing committed
            unsure.append(TopicPartition(tp.topic, tp.partition, offset))
    finally:
        consumer.close()
    return not unsure or _only_markers_after(bootstrap, unsure)


def _only_markers_after(
    bootstrap: str, starts: list[TopicPartition], timeout: float = 10.0
) -> bool:
    """True if no committed record lies at or after each of `starts` (read_committed, to
    each partition's end): what is left there is transaction markers or aborted records."""
    reader = Consumer(
        consumer_config(
            f"caught-up-probe-{os.getpid()}", bootstrap,
            **{"enable.partition.eof": True, "enable.auto.commit": False},
        )
    )  # fmt: skip
    try:
        reader.assign(starts)
        waiting = {(tp.topic, tp.partition) for tp in starts}
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is None:
                return False  # a record the group has not committed
            if error.code() == KafkaError._PARTITION_EOF:
                waiting.discard((message.topic(), message.partition()))
        return not waiting
    finally:
        reader.close()


def wait_caught_up(bootstrap: str, group: str, timeout: float = 60.0) -> None:
    """Until the group has committed everything, twice in a row (the sink's own dead letters
    land on a topic it reads, so the end moves once more after the first look)."""
    deadline = time.monotonic() + timeout
    streak = 0
    while time.monotonic() < deadline:
        streak = streak + 1 if group_caught_up(bootstrap, group, sink_topics()) else 0
        if streak >= 2:
            return
        time.sleep(1.0)
    raise TimeoutError(f"group {group} did not commit every record within {timeout}s")


@contextlib.contextmanager
def sink_in_thread(settings: HistorySinkSettings) -> Iterator[HistoryService]:
    """The history service in a thread of this process (its store is then this process's one
    chDB directory); stopped and its store closed on exit."""
    service = HistoryService(settings)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            service.run()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run, name="history-sink", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while service.sink is None or (
        settings.embedded and read_owner(settings.history.history_dir) is None
    ):
        if failures or not thread.is_alive():
            raise RuntimeError(f"the history service failed to start: {failures}")
        if time.monotonic() > deadline:
            raise TimeoutError("the history service did not start within 60s")
        time.sleep(0.05)
    try:
        yield service
    finally:
        service.stop()
        thread.join(30)
        if failures:
            raise failures[0]


@dataclass
class SinkProcess:
    """`python -m tickwheel.services.history` as a real process."""

    history_dir: Path
    group: str
    log_path: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self, **env: str) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tickwheel.services.history", "--instance", "history-test"],
            stdout=log,
            stderr=subprocess.STDOUT,
            # Embedded on purpose: each run owns its directory, even if CLICKHOUSE_URL is set.
            env={**{k: v for k, v in os.environ.items() if k != "CLICKHOUSE_URL"},
                 "TICKWHEEL_HISTORY_DIR": str(self.history_dir),
                 "TICKWHEEL_HISTORY_GROUP": self.group, **self.extra_env, **env},
        )  # fmt: skip
        log.close()

    def reader(self, timeout: float = 60.0) -> OwnerClient:
        """A client of this process's endpoint, once it announces one."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the sink exited with {self.process.returncode}: {self.log()}")
            info = read_owner(self.history_dir)
            if info is not None and info.pid == self.process.pid:
                client = OwnerClient(info)
                with contextlib.suppress(Exception):
                    client.ping()
                    return client
            time.sleep(0.1)
        raise TimeoutError(f"the sink announced no endpoint within {timeout}s: {self.log()}")

    def wait_exit(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]
