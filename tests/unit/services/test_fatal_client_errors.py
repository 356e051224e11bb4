"""A fatal Kafka client error ends a service's process, never its activity alone (decision
0200, issue 31): the guard that raises it from `consume`/`poll`, the services' loops on the
in-memory broker letting it through, and `serve`'s exit code a supervisor restarts on.

The same fault on the real broker and on a three-broker cluster is in
`tests/chaos/test_fatal_client_errors.py` and `tests/cluster/`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from tickwheel.adapters.kafka.client import KafkaError
from tickwheel.adapters.kafka.fatal import (
    FATAL_CLIENT_EXIT_CODE,
    FatalClientError,
    is_fatal_error,
    raise_if_fatal,
    raise_on_fatal_error,
)
from tickwheel.adapters.kafka.memory import MemoryBroker, MemoryClients
from tickwheel.adapters.kafka.memory._messages import MemoryMessage
from tickwheel.clock import FakeClock
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import load_topology

FENCED = "Broker: Static consumer fenced by other consumer with same group.instance.id"


def _message(error: KafkaError | None) -> MemoryMessage:
    return MemoryMessage("t", 0, 1, b"k", b"v", None, 0, error)


def test_a_fatal_error_among_the_messages_is_raised_and_a_passing_one_is_not() -> None:
    passing = KafkaError(KafkaError._PARTITION_EOF, "end")
    raise_if_fatal([_message(None), _message(passing)])  # the caller's to skip, as before
    for fatal in (
        KafkaError(KafkaError._FATAL, f"Fatal error: {FENCED}"),  # how a consumer's looks
        KafkaError(KafkaError.FENCED_INSTANCE_ID, FENCED, fatal=True),
    ):
        assert is_fatal_error(fatal)
        with pytest.raises(FatalClientError, match=r"fatal Kafka client error: .*fenced"):
            raise_if_fatal([_message(None), _message(fatal)])


def test_a_producers_fatal_error_callback_raises_and_a_transient_one_does_not() -> None:
    raise_on_fatal_error(KafkaError(KafkaError._TRANSPORT, "broker down"))
    with pytest.raises(FatalClientError):
        raise_on_fatal_error(
            KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence", fatal=True)
        )


class _Memory:
    def __init__(self) -> None:
        self.clock = FakeClock(1_800_000_000.0)
        self.broker = MemoryBroker(clock=self.clock)
        self.broker.create_topics(load_topology())
        self.clients = MemoryClients(self.broker)


def _turns(step: Any, count: int, clock: FakeClock) -> None:
    for _ in range(count):
        clock.advance(0.05)
        step()


def test_a_timer_whose_group_member_fails_fatally_stops_its_loop_with_the_error() -> None:
    memory = _Memory()
    settings = TimerSettings(
        instance="a", bootstrap="memory", group_id="timers", tick_ms=50, metrics_port=0
    )
    timer = TimerService(settings, clock=memory.clock, clients=memory.clients, inline=True)
    timer.start()
    _turns(timer.step, 40, memory.clock)
    assert timer.partitions, "the timer serves before the fault"
    memory.broker.fail_group_members("timers", FENCED)
    # Nothing in a turn may catch it: the loop ends, and `serve` ends the process.
    with pytest.raises(FatalClientError, match="fenced"):
        _turns(timer.step, 5, memory.clock)


def test_a_job_writer_whose_group_member_fails_fatally_stops_its_loop_with_the_error() -> None:
    memory = _Memory()
    settings = JobWriterSettings(instance="j", bootstrap="memory", group_id="writers")
    writer = JobWriterService(settings, memory.clients, clock=memory.clock)
    writer.start()
    for _ in range(2000):  # bounded: its restore runs on a thread, the fake answers at once
        writer.step()
        if len(writer.partitions) == 6:
            break
        threading.Event().wait(0.005)
    assert len(writer.partitions) == 6
    memory.broker.fail_group_members("writers", FENCED)
    with pytest.raises(FatalClientError, match="fenced"):
        _turns(writer.step, 5, memory.clock)


def _run_serving(body: str) -> subprocess.CompletedProcess[str]:
    """`serve` in a process of its own: it ends the process (os._exit)."""
    program = textwrap.dedent(
        """
        import logging, sys, threading
        from tickwheel.adapters.kafka.client import KafkaError
        from tickwheel.adapters.kafka.fatal import FatalClientError
        from tickwheel.logs import configure_logging
        from tickwheel.runtime.shutdown import serve

        configure_logging(logging.INFO)
        FATAL = FatalClientError(KafkaError(KafkaError._FATAL, "Fatal error: fenced"))

        class Service:
            def stop(self): pass
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )


def test_serve_ends_the_process_with_the_restart_code_on_a_fatal_client_error() -> None:
    done = _run_serving(
        """
        class Failing(Service):
            def run(self): raise FATAL
        serve(logging.getLogger("t"), "timer", lambda deadline: Failing())
        """
    )
    assert done.returncode == FATAL_CLIENT_EXIT_CODE, done.stderr
    assert "timer_client_fatal" in done.stdout + done.stderr


def test_a_fatal_client_error_in_another_thread_ends_the_process_too() -> None:
    """A follower or dispatcher thread that dies of it would leave the service up and that part
    of it silent: the process ends instead, and is restarted."""
    done = _run_serving(
        """
        class Waiting(Service):
            def run(self):
                def follow(): raise FATAL
                threading.Thread(target=follow).start()
                threading.Event().wait(30)  # the thread's error must end this wait
                return 0
        serve(logging.getLogger("t"), "watchdog", lambda deadline: Waiting())
        """
    )
    assert done.returncode == FATAL_CLIENT_EXIT_CODE, done.stderr
    assert "watchdog_client_fatal" in done.stdout + done.stderr
