"""What a job author imports to write handlers: the `@job` decorator, the handler's context and
the errors that classify a failure.

    from tickwheel.sdk import ExecutionContext, PermanentError, job

    @job("send-invoice", lease_seconds=60, heartbeat_seconds=20)
    def send_invoice(ctx: ExecutionContext) -> dict[str, str]:
        if "customer" not in ctx.payload:
            raise PermanentError("payload needs a customer")   # never retried
        invoices.insert_if_absent(key=ctx.execution_id, ...)     # idempotent: same key on every attempt
        return {"sent": ctx.payload["customer"]}

Run it with `tickwheel worker --module my_app.jobs`. Execution is **at least once**: the same
execution (same `execution_id`) may run more than once, even at the same time on two workers,
so a handler must be idempotent and safe to run concurrently (docs/job-authors.md).

Nothing here talks to Kafka: the worker service builds the context and carries out what it
reports, so handlers can be tested by building an `ExecutionContext` by hand.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from tickwheel.errors import InvalidInput, TickwheelError

if TYPE_CHECKING:  # annotations only: importing the SDK stays cheap
    from tickwheel.records import ExecutionRequest

__all__ = [
    "DuplicateJobType",
    "ExecutionCancelled",
    "ExecutionContext",
    "Handler",
    "HandlerRegistry",
    "JobType",
    "ModuleNotLoadable",
    "PermanentError",
    "RetryableError",
    "UnknownJobType",
    "job",
    "load_modules",
    "registry",
]


class PermanentError(TickwheelError, RuntimeError):
    """Raised by a handler when retrying cannot help (bad input, a refused target): the
    attempt fails with `error_kind="permanent"` and the execution is dead-lettered at once."""


class RetryableError(TickwheelError, RuntimeError):
    """Raised by a handler to say explicitly that a later attempt may succeed. Any exception
    that is not a `PermanentError` is treated the same way."""


class ExecutionCancelled(TickwheelError, RuntimeError):
    """Raised by `ExecutionContext.raise_if_cancelled()` once cancellation was requested; the
    attempt ends as `cancelled` (so does any ending after the signal was set)."""


class UnknownJobType(TickwheelError, LookupError):
    """No handler is registered for a job type; names the types this worker handles."""

    def __init__(self, job_type: str, known: Iterable[str]) -> None:
        self.job_type = job_type
        self.known = tuple(sorted(known))
        super().__init__(
            f"unknown job type {job_type!r}; this worker handles: "
            + (", ".join(self.known) or "(nothing)")
        )


class Heartbeater(Protocol):
    """What `ExecutionContext.heartbeat` calls: the worker's lease extender for the attempt."""

    def __call__(self) -> bool:
        """Extend the lease now; True when a heartbeat was recorded."""
        ...


def _no_heartbeat() -> bool:
    return False


# Bounded memo: a burst's contexts share their instants (slot, period, fire time), and a
# datetime is immutable, so one object serves them all (half a context's cost, issue 17).
@functools.lru_cache(maxsize=4096)
def _utc(epoch_ms: int | None) -> datetime | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


@dataclass
class ExecutionContext:
    """Everything a handler gets about the attempt it runs.

    `execution_id` is the idempotency key: it is the same on every attempt of an execution
    (retries, lease expiry, redelivery), so use it to make side effects happen once.
    """

    execution_id: str
    job_id: str
    job_type: str
    tenant_id: str
    attempt: int
    scheduled_time: datetime
    period_start: datetime
    period_end: datetime | None
    payload: dict[str, Any]
    fire_time: datetime | None = None
    max_attempts: int = 1
    # A workflow step's execution: its instance and step (None for a job's execution).
    workflow_id: str | None = None
    step_id: str | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    _heartbeat: Heartbeater = field(default=_no_heartbeat, repr=False)

    @classmethod
    def from_request(
        cls,
        # An ExecutionRequest; the worker's lanes still hold theirs as plain dicts, so any
        # mapping of its fields is taken.
        request: ExecutionRequest | Mapping[str, Any],
        payload: dict[str, Any],
        heartbeat: Heartbeater = _no_heartbeat,
        cancel_event: threading.Event | None = None,
    ) -> ExecutionContext:
        """A context for an `ExecutionRequest` record (instants are epoch milliseconds)."""
        scheduled = _utc(request["scheduled_time"])
        period_start = _utc(request["period_start"])
        assert scheduled is not None and period_start is not None
        return cls(
            execution_id=request["execution_id"],
            job_id=request["job_id"],
            job_type=request["job_type"],
            tenant_id=request["tenant_id"],
            attempt=request["attempt"],
            scheduled_time=scheduled,
            period_start=period_start,
            period_end=_utc(request.get("period_end")),
            payload=payload,
            fire_time=_utc(request.get("fire_time")),
            max_attempts=request.get("max_attempts", 1),
            workflow_id=request.get("workflow_id"),
            step_id=request.get("step_id"),
            cancel_event=cancel_event or threading.Event(),
            _heartbeat=heartbeat,
        )

    def heartbeat(self) -> bool:
        """Extend this attempt's lease now. The worker already heartbeats on its own every
        `heartbeat_seconds` while the handler runs; call this from long steps that must not
        lose the lease. Calls closer together than a second are merged (returns False)."""
        return self._heartbeat()

    @property
    def cancelled(self) -> bool:
        """True once someone asked to cancel this execution (`tickwheel.sdk.cancel`, or
        `tickwheel executions cancel`)."""
        return self.cancel_event.is_set()

    def raise_if_cancelled(self) -> None:
        """Stop here if cancellation was requested (raises `ExecutionCancelled`)."""
        if self.cancel_event.is_set():
            raise ExecutionCancelled(f"execution {self.execution_id} was cancelled")

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early on cancellation; True when cancelled."""
        return self.cancel_event.wait(max(0.0, seconds))


Handler = Callable[[ExecutionContext], Any]
"""A job handler: takes the attempt's context; what it returns is recorded as the result."""


@dataclass(frozen=True)
class JobType:
    """A registered handler. `lease_seconds`/`heartbeat_seconds` left as None take the
    values of each execution request (30 s and 10 s unless the job says otherwise).
    `max_run_seconds` is how long one attempt may run before the worker fails it as
    retryable and gives its slot to other work; a job's own limit wins over it, and None
    takes the worker's `--max-run-seconds`."""

    name: str
    handler: Handler
    lease_seconds: int | None = None
    heartbeat_seconds: int | None = None
    description: str = ""
    max_run_seconds: int | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip() or len(self.name) > 100:
            raise InvalidInput("job type", "a non-empty name of at most 100 characters")
        if self.lease_seconds is not None and self.lease_seconds < 1:
            raise InvalidInput("lease_seconds", f"{self.lease_seconds} is not a whole second >= 1")
        if self.heartbeat_seconds is not None and self.heartbeat_seconds < 1:
            raise InvalidInput(
                "heartbeat_seconds", f"{self.heartbeat_seconds} is not a whole second >= 1"
            )
        if self.max_run_seconds is not None and (
            isinstance(self.max_run_seconds, bool) or self.max_run_seconds < 1
        ):
            raise InvalidInput(
                "max_run_seconds", f"{self.max_run_seconds} is not a whole second >= 1"
            )
        if (
            self.lease_seconds is not None
            and self.heartbeat_seconds is not None
            and self.heartbeat_seconds >= self.lease_seconds
        ):
            raise InvalidInput(
                "heartbeat_seconds",
                f"{self.heartbeat_seconds} must be shorter than lease_seconds "
                f"({self.lease_seconds}), or the lease lapses between heartbeats",
            )


class DuplicateJobType(TickwheelError, ValueError):
    """Two different handlers were registered under one job type name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"job type {name!r} is registered twice; job type names are unique")
        self.name = name


class HandlerRegistry:
    """Job types by name. The module-level `registry` is the one `@job` fills and
    `tickwheel worker` serves (with the built-ins)."""

    def __init__(self, types: Iterable[JobType] = ()) -> None:
        self._types: dict[str, JobType] = {}
        self._lock = threading.Lock()
        for job_type in types:
            self.add(job_type)

    def add(self, job_type: JobType) -> JobType:
        """Register `job_type`; the same handler twice is a no-op, another one under the same
        name raises `DuplicateJobType`."""
        with self._lock:
            existing = self._types.get(job_type.name)
            if existing is not None and existing.handler is not job_type.handler:
                raise DuplicateJobType(job_type.name)
            self._types[job_type.name] = job_type
        return job_type

    def job(
        self,
        name: str,
        *,
        lease_seconds: int | None = None,
        heartbeat_seconds: int | None = None,
        description: str = "",
        max_run_seconds: int | None = None,
    ) -> Callable[[Handler], Handler]:
        """Decorator registering a handler for job type `name`."""

        def register(handler: Handler) -> Handler:
            self.add(
                JobType(
                    name,
                    handler,
                    lease_seconds,
                    heartbeat_seconds,
                    description or (handler.__doc__ or "").strip().split("\n")[0],
                    max_run_seconds,
                )
            )
            return handler

        return register

    def get(self, name: str) -> JobType:
        """The job type `name`; raises `UnknownJobType` listing what is handled."""
        try:
            return self._types[name]
        except KeyError:
            raise UnknownJobType(name, self._types) from None

    def names(self) -> tuple[str, ...]:
        """The registered job type names, sorted."""
        return tuple(sorted(self._types))

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[JobType]:
        return iter([self._types[n] for n in self.names()])

    def __len__(self) -> int:
        return len(self._types)

    def merged(self, other: HandlerRegistry) -> HandlerRegistry:
        """A new registry with the types of both (a name in both is an error)."""
        return HandlerRegistry([*self, *other])

    def only(self, names: Iterable[str] | None) -> HandlerRegistry:
        """A new registry restricted to `names` (None: everything); an unknown name is an
        error listing the registered types."""
        if names is None:
            return HandlerRegistry(self)
        return HandlerRegistry([self.get(n) for n in names])


registry = HandlerRegistry()
"""The registry `@job` adds to; `tickwheel worker --module M` imports M to fill it."""


def job(
    name: str,
    *,
    lease_seconds: int | None = None,
    heartbeat_seconds: int | None = None,
    description: str = "",
    max_run_seconds: int | None = None,
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of job type `name` in `registry`.

    `lease_seconds`/`heartbeat_seconds` override the request's lease for this type: a lease
    is how long the worker may go silent before the execution is re-issued elsewhere.
    `max_run_seconds` bounds one attempt of this type (a job's own limit wins; None: the
    worker's `--max-run-seconds`): past it the attempt is failed as retryable, its
    cancellation signal is set and its slot goes to other work.
    """
    return registry.job(
        name,
        lease_seconds=lease_seconds,
        heartbeat_seconds=heartbeat_seconds,
        description=description,
        max_run_seconds=max_run_seconds,
    )


class ModuleNotLoadable(TickwheelError, ImportError):
    """A module named to `tickwheel worker --module` could not be imported; says why."""

    def __init__(self, module: str, reason: str) -> None:
        super().__init__(f"cannot import handler module {module!r}: {reason}")
        self.module = module


def load_modules(modules: Iterable[str]) -> None:
    """Import user modules so their `@job` decorators register with `registry`."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ModuleNotLoadable(name, str(exc)) from exc
