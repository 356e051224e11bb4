"""`WorkflowContext`: what workflow code is handed, and the only way it touches the world.

Every method that could give a different answer on another run goes through the history:
a step's result, a timer, a signal, the time, a random number, a patch decision. On the first
run the engine records it; on every replay it hands the recorded value back.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn, Protocol, TypeVar

from tickwheel.core.codeflow.errors import ContinueAsNew
from tickwheel.core.codeflow.history import as_data
from tickwheel.durations import parse_duration_ms

__all__ = ["Driver", "Duration", "WorkflowContext", "duration_ms"]

T = TypeVar("T")
Duration = str | timedelta


def duration_ms(duration: Duration, field: str = "duration") -> int:
    """Milliseconds in a duration written as `"24h"`, `"1h30m"` or a `timedelta`."""
    if isinstance(duration, timedelta):
        ms = int(duration.total_seconds() * 1000)
    elif isinstance(duration, str):
        ms = parse_duration_ms(duration, field)
    else:
        raise TypeError(f"{field} is a string such as '24h' or a timedelta; got {duration!r}")
    if ms < 0:
        raise ValueError(f"{field} must not be negative; got {duration!r}")
    return ms


class Driver(Protocol):
    """The engine, as the context sees it."""

    workflow_name: str
    workflow_id: str
    run_number: int
    custom_status: Any
    history_length: int

    def is_replaying(self) -> bool: ...
    def schedule_step(
        self, fn: Callable[..., Any], args: tuple[Any, ...], name: str | None
    ) -> Awaitable[Any]: ...
    def start_timer(
        self, name: str, duration_ms: int | None, until_ms: int | None
    ) -> Awaitable[None]: ...
    def wait_signal(self, name: str, timeout_ms: int | None) -> Awaitable[Any]: ...
    def side_effect(self, kind: str) -> Any: ...
    def register_rollback(
        self, fn: Callable[..., Any], args: tuple[Any, ...], name: str | None
    ) -> None: ...
    def patched(self, change_id: str) -> bool: ...
    def start_child(
        self, workflow: object, input: Any, workflow_id: str | None
    ) -> Awaitable[Any]: ...


class WorkflowContext:
    """Handed to a `@workflow` function as its first argument.

    Workflow code must decide, never do: anything that reads the clock, randomness, a file or
    the network is a step (`await ctx.run(step, ...)`), or one of the recorded helpers here
    (`ctx.now()`, `ctx.random()`, `ctx.uuid4()`). Code that strays is refused at registration
    (a static check) and stopped at run time.
    """

    __slots__ = ("_driver",)

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    @property
    def workflow_id(self) -> str:
        """The instance's id (the same for every run of a continued-as-new instance)."""
        return self._driver.workflow_id

    @property
    def workflow_name(self) -> str:
        return self._driver.workflow_name

    @property
    def run_number(self) -> int:
        """1 for the first run, one more after each `continue_as_new`."""
        return self._driver.run_number

    @property
    def history_length(self) -> int:
        """How many events the history holds up to the input being handled (the same on
        every replay): past a few thousand, `continue_as_new` keeps replays fast."""
        return self._driver.history_length

    @property
    def is_replaying(self) -> bool:
        """True while the code re-runs what its history already holds."""
        return self._driver.is_replaying()

    async def run(
        self, step: Callable[..., Awaitable[T]], *args: Any, name: str | None = None
    ) -> T:
        """Run `step(*args)` once, durably: its result is recorded, and every replay hands
        the recorded result back instead of running it again. The step is identified by
        its name (`@step(name=...)`, `name=` here, or the function's name) and its position;
        its input is compared on replay. Raises `StepFailed` when it failed finally."""
        result: T = await self._driver.schedule_step(step, args, name)
        return result

    async def sleep(self, duration: Duration) -> None:
        """A durable timer (`"24h"`, `"7d"`, a `timedelta`): nothing waits in a process."""
        await self._driver.start_timer("sleep", duration_ms(duration), None)

    async def sleep_until(self, when: datetime) -> None:
        """A durable timer until the aware instant `when`."""
        if when.tzinfo is None:
            raise ValueError(f"sleep_until needs an aware datetime (with a zone); got {when!r}")
        await self._driver.start_timer("sleep_until", None, int(when.timestamp() * 1000))

    async def wait_signal(self, name: str, timeout: Duration | None = None) -> Any:
        """The payload of the next signal `name`, or None when `timeout` passes first. A
        signal sent before the wait is buffered, never lost; a signal id seen twice counts
        once."""
        timeout_ms = None if timeout is None else duration_ms(timeout, "timeout")
        return await self._driver.wait_signal(name, timeout_ms)

    def now(self) -> datetime:
        """The workflow's time (UTC): recorded on the first run, the same on every replay."""
        ms = int(self._driver.side_effect("now"))
        return datetime.fromtimestamp(ms / 1000, UTC)

    def random(self) -> float:
        """A number in [0, 1), recorded on the first run, the same on every replay."""
        return float(self._driver.side_effect("random"))

    def uuid4(self) -> uuid.UUID:
        """A random UUID, recorded on the first run, the same on every replay."""
        return uuid.UUID(str(self._driver.side_effect("uuid4")))

    def on_rollback(self, step: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        """Register a compensation (saga): if the workflow fails finally, or is cancelled,
        the compensations run as steps, in exact reverse order of registration."""
        self._driver.register_rollback(step, args, name)

    def patched(self, change_id: str) -> bool:
        """True on runs that reach this point with the new code (a marker is recorded), False
        when replaying a history recorded before the change: branch on it to change running
        workflows safely."""
        return self._driver.patched(change_id)

    async def child(self, workflow: object, input: Any, *, workflow_id: str | None = None) -> Any:
        """Start a child workflow (a `@workflow` function or its name) and await its result;
        raises `ChildFailed` when it fails."""
        return await self._driver.start_child(workflow, input, workflow_id)

    def continue_as_new(self, input: Any) -> NoReturn:
        """End this run and start the next one of the same instance with `input` and an empty
        history (for long-lived instances)."""
        raise ContinueAsNew(as_data(input, "the input of continue_as_new"))

    def set_status(self, value: Any) -> None:
        """Publish a read-only status (JSON data) that callers can query."""
        self._driver.custom_status = as_data(value, "a workflow status")

    @property
    def status(self) -> Any:
        """The status last set with `set_status` (None before)."""
        return self._driver.custom_status
