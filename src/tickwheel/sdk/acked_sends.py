"""Sends whose acknowledgement a coroutine awaits (decision 0165).

`EventProducer.deliver` parks a thread per record, polling the producer every 5 ms until its
report comes: the API's job writes held one thread each for that and for their verdicts. Here
the record's delivery report resolves an asyncio future on the sender's loop instead, and one
thread of its own polls the producer, so a report is served as soon as the broker answers
(not when the next send happens to poll) and the reports served by one poll reach each loop
in one hand-over.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from tickwheel.adapters.kafka.producer import ProduceFailed

POLL_S = 0.1  # an idle poll's wait: a report arriving ends it at once


def _settle(results: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    """On the senders' loop: each future gets its acknowledgement or its failure."""
    for future, failure in results:
        if future.done():
            continue  # its sender gave up waiting
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)


class AckedSends:
    """A producer (`send(topic, key, value, on_delivery=...)`, `poll(timeout)`) whose sends
    resolve futures when acknowledged."""

    def __init__(self, producer: Any) -> None:
        self._producer = producer
        self._ready: list[
            tuple[asyncio.AbstractEventLoop, asyncio.Future[None], BaseException | None]
        ] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[None],
    ) -> None:
        """Send; `future` (of `loop`) is resolved when the broker acknowledged the record."""
        self._started()

        def delivered(err: Any, _msg: Any) -> None:
            failure: BaseException | None = None
            if err is not None:
                failure = ProduceFailed(f"{topic}: delivery failed: {err}")
            if threading.current_thread() is self._thread:
                self._ready.append((loop, future, failure))  # handed over after the poll
            else:  # served by a poll elsewhere (the send's own): straight to the loop
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle, [(future, failure)])

        self._producer.send(topic, key, value, on_delivery=delivered)

    def _started(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._poll, name="acked-sends", daemon=True)
                self._thread = thread
                thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(POLL_S)
            if not self._ready:
                continue
            ready, self._ready = self._ready, []
            by_loop: dict[asyncio.AbstractEventLoop, list[Any]] = {}
            for loop, future, failure in ready:
                by_loop.setdefault(loop, []).append((future, failure))
            for loop, results in by_loop.items():
                with contextlib.suppress(RuntimeError):  # a loop closed meanwhile
                    loop.call_soon_threadsafe(_settle, results)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
