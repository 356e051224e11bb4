"""A bounded stop for every service process (decision 0050).

A stopping service flushes, commits and closes its Kafka clients; with the broker gone each of
those calls can block for tens of seconds (a synchronous commit waits for a coordinator that
will not come back, a consumer's close tries to leave its group, a flush waits out
`message.timeout.ms`), and in sequence they added up to minutes. So a stop arms a deadline:
whatever still waits when it passes is abandoned and the process exits. What is abandoned is
safe to abandon: an uncommitted request or event is delivered again (at least once), and an
undelivered lease or outcome is settled by the timer's lease deadline.

Only a service's process entry point arms one (tests that run a service in a thread never do),
and the entry point ends with `exit_now`, so that no client's destructor can block the
interpreter's own shutdown either.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import NoReturn, Protocol

# Kafka's share of a stop: flush, commit, close. Ten seconds is far more than a reachable
# broker needs, and keeps a stop with nothing running under 15 s however the broker is.
KAFKA_BUDGET_S = 10.0


class ShutdownDeadline:
    """`arm(budget_s)` once a stop begins: `budget_s` later the process exits with
    `exit_code` (1 unless told otherwise), logging what it gave up on."""

    def __init__(self, log: logging.Logger, service: str) -> None:
        self.log = log
        self.service = service
        self.exit_code = 1
        self._deadline = math.inf
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None

    def arm(self, budget_s: float) -> None:
        """Exit at most `budget_s` from now; a later, shorter budget tightens the deadline, a
        longer one never extends it."""
        with self._lock:
            self._deadline = min(self._deadline, time.monotonic() + max(0.0, budget_s))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="shutdown-deadline", daemon=True
                )
                self._thread.start()
        self._changed.set()

    @property
    def armed(self) -> bool:
        return self._deadline < math.inf

    def remaining(self) -> float:
        """Seconds left before the exit (infinite while not armed)."""
        return max(0.0, self._deadline - time.monotonic())

    def _watch(self) -> None:
        while True:
            left = self.remaining()
            if left <= 0:
                break
            self._changed.wait(left)
            self._changed.clear()
        self.log.warning(
            "stop took too long; exiting without what is still pending",
            extra={"action": f"{self.service}_stop_abandoned", "exit_code": self.exit_code},
        )
        exit_now(self.exit_code)


def exit_now(code: int) -> NoReturn:
    """Flush the logs and leave at once: no interpreter teardown, no client destructors."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):  # an exit must not fail on a closed stream
            handler.flush()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(stop: Callable[[], None]) -> None:
    """Call `stop` on SIGTERM or SIGINT, from a thread of its own.

    A Python signal handler runs on the main thread between bytecodes, so while the main thread
    waits inside the Kafka client (a restore's `init_transactions` against a broker that went
    away blocks for up to 30 s) a stop would not even begin. Instead the signals are blocked in
    every thread (call this before any Kafka client starts its threads: they inherit the mask)
    and one thread waits for them, so the stop, and the deadline it arms, begin at once.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def wait() -> None:
        while True:
            signal.sigwait(STOP_SIGNALS)
            stop()

    threading.Thread(target=wait, name="stop-signals", daemon=True).start()


class Stoppable(Protocol):
    def run(self) -> int | None: ...

    def stop(self) -> None: ...


def serve(
    log: logging.Logger,
    service: str,
    build: Callable[[ShutdownDeadline], Stoppable],
    *,
    program: str | None = None,
    on_main_thread: bool = True,
    exit_codes: Mapping[type[Exception], int] | None = None,
) -> NoReturn:
    """Run a service process to its end and exit with its code, the same way for every service:
    a bounded stop (a deadline armed by `stop`), stop signals waited for on a thread of their
    own, a fatal Kafka client error logged (code 75, to be restarted), a `TickwheelError` as
    one line (code 2), a crash logged (code 1), `exit_codes` for
    errors a service ends on by design. `program` names it in the error line."""
    deadline = ShutdownDeadline(log, service)
    stopping: list[Stoppable] = []
    exit_on_fatal_in_threads(log, service)
    if on_main_thread:
        # Before any Kafka client exists: their threads inherit the blocked signals.
        stop_on_signals(lambda: stopping[0].stop() if stopping else exit_now(0))
    code = 0
    try:
        running = build(deadline)
        stopping.append(running)
        code = running.run() or 0
    except Exception as exc:
        code = _exit_code(log, service, program or service, exc, exit_codes or {})
    # Nothing left (a client's destructor, the interpreter's teardown) may hold the process up.
    exit_now(code)


def exit_on_fatal_in_threads(log: logging.Logger, service: str) -> None:
    """A fatal Kafka client error raised in any thread of the process (a follower, a webhook
    dispatcher) ends the process as it would on the main thread: a thread that died of it would
    leave the service up and that part of it silent (decision 0200)."""
    from tickwheel.adapters.kafka.fatal import FATAL_CLIENT_EXIT_CODE, FatalClientError

    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, FatalClientError):
            _exit_code(log, service, service, args.exc_value, {})
            exit_now(FATAL_CLIENT_EXIT_CODE)
        previous(args)

    threading.excepthook = hook


def _exit_code(
    log: logging.Logger,
    service: str,
    program: str,
    exc: Exception,
    exit_codes: Mapping[type[Exception], int],
) -> int:
    from tickwheel.adapters.kafka.fatal import FATAL_CLIENT_EXIT_CODE, FatalClientError
    from tickwheel.errors import TickwheelError

    if isinstance(exc, FatalClientError):
        # Its clients cannot go on: the supervisor starts the process afresh (decision 0200).
        log.error(
            f"{service} ends on a fatal Kafka client error; a restart builds new clients",
            extra={
                "action": f"{service}_client_fatal",
                "error": exc.reason,
                "exit_code": FATAL_CLIENT_EXIT_CODE,
            },
        )
        return FATAL_CLIENT_EXIT_CODE
    for kind, code in exit_codes.items():
        if isinstance(exc, kind):
            log.warning(
                f"{service} ended: {exc}", extra={"action": f"{service}_ended", "error": str(exc)}
            )
            return code
    if isinstance(exc, TickwheelError):
        print(f"tickwheel {program}: error: {exc}", file=sys.stderr)
        return 2
    log.exception(f"{service} crashed", extra={"action": f"{service}_crashed"})
    return 1
