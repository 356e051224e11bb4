"""The event loop workflow code runs on: ready callbacks in FIFO order, nothing else.

Temporal runs each workflow on an `asyncio.AbstractEventLoop` subclass of its own so that the
author can `await`, `asyncio.gather` and `create_task` as usual; this is the minimal version.
It has no clock, no timers, no I/O and no threads: everything that would need one raises a
`NondeterministicCall` naming what to use instead (`ctx.sleep` for `asyncio.sleep(1)`, a step
for I/O). Futures are resolved by the engine from the history, so running the same history
twice runs the same callbacks in the same order.

`in_workflow_code()` says whether the current context is workflow code being run (a context
variable, set by the engine around each activation and copied into every task it creates):
the SDK's run-time guard (an audit hook) asks it before refusing `open` or `socket.connect`.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Mapping
from typing import Any, NoReturn, TypeVar, TypeVarTuple, Unpack

from tickwheel.core.codeflow.errors import NondeterministicCall, WorkflowStuck

__all__ = ["DeterministicLoop", "Guard", "in_workflow_code", "report_violation"]

T = TypeVar("T")
_Ts = TypeVarTuple("_Ts")


class Guard:
    """What one activation noticed: the first forbidden call, even if the code caught it."""

    __slots__ = ("violation",)

    def __init__(self) -> None:
        self.violation: NondeterministicCall | None = None


_GUARD: contextvars.ContextVar[Guard | None] = contextvars.ContextVar(
    "tickwheel_codeflow_guard", default=None
)


def in_workflow_code() -> bool:
    """Whether the caller runs as workflow code (not a step, not the engine's caller)."""
    return _GUARD.get() is not None


def report_violation(call: str, instead: str) -> NondeterministicCall:
    """Note a forbidden call on the running activation (it fails even if the code catches
    the error) and return the error to raise."""
    error = NondeterministicCall(call, instead)
    guard = _GUARD.get()
    if guard is not None and guard.violation is None:
        guard.violation = error
    return error


def _refuse(call: str, instead: str) -> NoReturn:
    raise report_violation(call, instead)


_SLEEP = "use `await ctx.sleep(...)` (a durable timer) or `ctx.wait_signal(name, timeout=...)`"
_IO = "do it in a step: `await ctx.run(step_function, ...)`"


class DeterministicLoop(asyncio.AbstractEventLoop):
    """Runs ready callbacks only; `run_ready` returns when none is left (the code waits on
    something only the history can answer)."""

    def __init__(self, guard: Guard, max_turns: int = 1_000_000) -> None:
        self._ready: deque[asyncio.Handle] = deque()
        self._guard = guard
        self._max_turns = max_turns
        self._closed = False
        self._running = False
        self.unhandled: list[Mapping[str, object]] = []

    # -- what the engine calls --------------------------------------------------------------

    def run_ready(self, workflow: str) -> None:
        """Run callbacks until none is ready, as workflow code (guarded, this loop running)."""
        outer = asyncio.events._get_running_loop()
        token = _GUARD.set(self._guard)
        asyncio.events._set_running_loop(self)
        self._running = True
        turns = 0
        try:
            while self._ready:
                turns += 1
                if turns > self._max_turns:
                    raise WorkflowStuck(workflow, self._max_turns)
                handle = self._ready.popleft()
                if not handle._cancelled:
                    handle._run()
        finally:
            self._running = False
            asyncio.events._set_running_loop(outer)
            _GUARD.reset(token)

    def start(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task for `coro`, its context marked as workflow code."""
        token = _GUARD.set(self._guard)
        try:
            return self.create_task(coro)
        finally:
            _GUARD.reset(token)

    # -- what asyncio's futures and tasks call ----------------------------------------------

    def call_soon(
        self,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(
        self,
        coro: Coroutine[Any, Any, T] | Generator[Any, None, T],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[T]:
        return asyncio.Task(coro, loop=self, name=name, context=context)

    def get_debug(self) -> bool:
        return False

    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self._ready.clear()

    def call_exception_handler(self, context: Mapping[str, object]) -> None:
        # A task destroyed while pending (an evicted instance) or an exception nobody
        # retrieved: kept for the engine to look at, never printed from inside a replay.
        self.unhandled.append(context)

    def default_exception_handler(self, context: Mapping[str, object]) -> None:
        self.unhandled.append(context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        pass

    # -- what workflow code may not do ------------------------------------------------------

    def time(self) -> float:
        _refuse("the event loop's clock (loop.time())", "use ctx.now()")

    def call_later(
        self,
        delay: float,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        _refuse("asyncio.sleep / loop.call_later (a real timer)", _SLEEP)

    def call_at(
        self,
        when: float,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        _refuse("asyncio.timeout / asyncio.wait_for / loop.call_at (a real timer)", _SLEEP)

    def call_soon_threadsafe(
        self,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        _refuse("call_soon_threadsafe (another thread)", _IO)

    def run_in_executor(
        self, executor: Any, func: Callable[[Unpack[_Ts]], T], *args: *_Ts
    ) -> asyncio.Future[T]:
        _refuse("run_in_executor / asyncio.to_thread (a thread)", _IO)

    async def getaddrinfo(self, *args: Any, **kwargs: Any) -> Any:
        _refuse("getaddrinfo (the network)", _IO)

    async def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        _refuse("a network connection", _IO)

    async def subprocess_exec(self, *args: Any, **kwargs: Any) -> Any:
        _refuse("a subprocess", _IO)

    async def subprocess_shell(self, *args: Any, **kwargs: Any) -> Any:
        _refuse("a subprocess", _IO)

    def run_forever(self) -> None:
        _refuse("run_forever", "the engine drives this loop")

    def run_until_complete(self, future: Any) -> Any:
        _refuse("run_until_complete", "the engine drives this loop")
