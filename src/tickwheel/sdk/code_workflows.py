"""Workflows written as Python code: the author's decorators and the determinism checks
(docs/workflows-code.md, decision 0216).

    from tickwheel.sdk import WorkflowContext, step, workflow

    @step(max_attempts=5, timeout="30s")
    async def authorize(order: dict) -> dict: ...

    @workflow("process_order")
    async def process_order(ctx: WorkflowContext, order: dict) -> dict:
        auth = await ctx.run(authorize, order)
        ctx.on_rollback(release_authorization, auth)
        await ctx.sleep("24h")
        return await ctx.run(capture_payment, auth)

A workflow function decides; its steps do. `@workflow` refuses, when it is applied, a function
whose body reads the clock, randomness, files, the network, a subprocess or a thread (a static
check of its source, one line naming the function, the line and what to use instead); at run
time, the engine's event loop refuses real timers and threads, and an audit hook refuses
`open`, sockets and subprocesses while workflow code runs. Steps may do anything.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from tickwheel.core.codeflow import (
    STEP_ATTRIBUTE,
    WORKFLOW_ATTRIBUTE,
    ChildFailed,
    Divergence,
    NondeterministicCall,
    StepFailed,
    StepInfo,
    WorkflowContext,
    WorkflowSpec,
    duration_ms,
    in_workflow_code,
    report_violation,
)
from tickwheel.core.codeflow.definition import check_workflow_name
from tickwheel.core.retry import RetryPolicy
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.sdk.worker import PermanentError

__all__ = [
    "ChildFailed",
    "Divergence",
    "NondeterministicCall",
    "NondeterministicWorkflow",
    "StepFailed",
    "Violation",
    "WorkflowContext",
    "check_workflow_code",
    "step",
    "workflow",
]

F = TypeVar("F", bound=Callable[..., Any])

_CLOCK = "use ctx.now()"
_SLEEP = "use `await ctx.sleep(...)` (a durable timer)"
_RANDOM = "use ctx.random() or ctx.uuid4()"
_STEP = "do it in a step: `await ctx.run(a_step, ...)`"
_TIMEOUT = "use ctx.wait_signal(name, timeout=...) or a step's timeout"

# Dotted names workflow code may not call, and what to use instead. A name ending in "." is
# every name under it. Names are matched as written (the import resolved through the
# module's globals) and as defined (`asyncio.tasks.sleep` for `from asyncio import sleep`).
FORBIDDEN: dict[str, str] = {
    **dict.fromkeys(
        [
            "time.time",
            "time.time_ns",
            "time.monotonic",
            "time.monotonic_ns",
            "time.perf_counter",
            "time.perf_counter_ns",
            "time.process_time",
            "time.localtime",
            "time.gmtime",
            "time.ctime",
            "time.asctime",
            "time.strftime",
            "datetime.datetime.now",
            "datetime.datetime.utcnow",
            "datetime.datetime.today",
            "datetime.date.today",
        ],
        _CLOCK,
    ),
    "time.sleep": _SLEEP,
    "asyncio.sleep": _SLEEP,
    "asyncio.tasks.sleep": _SLEEP,
    **dict.fromkeys(["random.", "secrets.", "os.urandom", "os.getrandom"], _RANDOM),
    **dict.fromkeys(["uuid.uuid1", "uuid.uuid4"], "use ctx.uuid4()"),
    **dict.fromkeys(
        ["asyncio.wait_for", "asyncio.tasks.wait_for", "asyncio.timeout", "asyncio.timeouts."],
        _TIMEOUT,
    ),
    **dict.fromkeys(
        [
            "threading.",
            "_thread.",
            "concurrent.futures.",
            "multiprocessing.",
            "subprocess.",
            "os.system",
            "os.popen",
            "os.fork",
            "asyncio.to_thread",
            "asyncio.threads.",
            "asyncio.create_subprocess_exec",
            "asyncio.create_subprocess_shell",
            "asyncio.subprocess.",
            "asyncio.open_connection",
            "asyncio.streams.",
            "socket.",
            "ssl.",
            "urllib.",
            "http.client.",
            "requests.",
            "httpx.",
            "aiohttp.",
            "builtins.open",
            "io.open",
            "pathlib.Path.open",
            "pathlib.Path.read_text",
            "pathlib.Path.read_bytes",
            "pathlib.Path.write_text",
            "pathlib.Path.write_bytes",
            "builtins.input",
            "os.environ.get",
            "os.getenv",
        ],
        _STEP,
    ),
}


class NondeterministicWorkflow(TickwheelError, ValueError):
    """`@workflow` refused a function whose body calls something that gives a different
    answer on another run (the clock, randomness, files, the network, threads). `violations`
    lists each call; the message names the first: the function, its file and line, the call,
    and what to use instead."""

    def __init__(self, violations: list[Violation]) -> None:
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(
            f"{first.filename}:{first.line}: workflow function {first.function} calls "
            f"{first.call}(); {first.instead}{more}"
        )
        self.violations = violations


@dataclass(frozen=True, slots=True)
class Violation:
    """One forbidden call in a workflow function's body."""

    function: str
    filename: str
    line: int
    call: str
    instead: str


def _forbidden(name: str) -> str | None:
    for prefix, instead in FORBIDDEN.items():
        if prefix.endswith(".") and name.startswith(prefix):
            return instead
        if name == prefix or name.startswith(prefix + "."):
            return instead
    return None


def _origin(value: object) -> str | None:
    """The dotted name an object was defined under (a module's name for a module)."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if module is None:
        owner = getattr(value, "__self__", None)
        if isinstance(owner, types.ModuleType):
            module = owner.__name__
        elif owner is not None:
            module = type(owner).__module__
            qualname = f"{type(owner).__qualname__}.{getattr(value, '__name__', '?')}"
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def check_workflow_code(fn: Callable[..., Any]) -> list[Violation]:
    """The forbidden calls in `fn`'s body (nested functions included), from its source. A
    function whose source cannot be read (defined in a REPL) is not checked: the run-time
    guard still is."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError):
        return []
    tree = ast.parse(textwrap.dedent("".join(lines)))
    function = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)),
        None,
    )
    if function is None:
        return []
    scope: Mapping[str, object] = getattr(fn, "__globals__", {})
    local_imports: dict[str, str] = {}
    body = [n for stmt in function.body for n in ast.walk(stmt)]
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local_imports[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local_imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found: list[Violation] = []
    qualname = getattr(fn, "__qualname__", getattr(fn, "__name__", "?"))
    for node in body:
        if not isinstance(node, ast.Call):
            continue
        parts = _dotted(node.func)
        if not parts:
            continue
        root, rest = parts[0], parts[1:]
        names: list[str] = []
        if root in local_imports:
            names.append(".".join([local_imports[root], *rest]))
        elif root in scope:
            value = scope[root]
            written = value.__name__ if isinstance(value, types.ModuleType) else _origin(value)
            if written is not None:
                names.append(".".join([written, *rest]))
            target: Any = value
            for attr in rest:
                target = getattr(target, attr, None)
            defined = _origin(target) if target is not None else None
            if defined is not None:
                names.append(defined)
        elif hasattr(builtins, root):
            names.append(".".join(["builtins", root, *rest]))
        for name in names:
            instead = _forbidden(name)
            if instead is not None:
                line = first_line + node.lineno - 1
                found.append(Violation(qualname, filename, line, ".".join(parts), instead))
                break
    return found


# -- the run-time guard ---------------------------------------------------------------------

_AUDITED = {
    "open": "open() (a file)",
    "socket.connect": "socket.connect (the network)",
    "socket.getaddrinfo": "getaddrinfo (the network)",
    "socket.bind": "socket.bind (the network)",
    "subprocess.Popen": "a subprocess",
    "os.system": "os.system",
    "os.exec": "os.exec*",
    "os.posix_spawn": "os.posix_spawn",
    "os.spawn": "os.spawn*",
}
_IMPORTS = (".py", ".pyc", ".so", ".pyd", ".pth")
_hook_lock = threading.Lock()
_hook_installed = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    what = _AUDITED.get(event)
    if what is None or not in_workflow_code():
        return
    if event == "open" and len(args) > 1 and args[1] == "r" and str(args[0]).endswith(_IMPORTS):
        return  # the import system reading a module (io.open_code)
    raise report_violation(what, _STEP)


def install_guard() -> None:
    """Install the audit hook that stops workflow code from opening files, sockets or
    subprocesses at run time (once per process; it costs a dict lookup per audited event
    outside workflow code)."""
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True


# -- the decorators -------------------------------------------------------------------------


def workflow(
    name: str, *, compensate_on_cancel: bool = True, check: bool = True
) -> Callable[[F], F]:
    """Declare `async def f(ctx: WorkflowContext, input)` the workflow `name` (its stable
    identity in histories: rename the function freely, never the name of a running one).

    The body is checked for calls that are not deterministic (`check=False` skips it, for
    code you vouch for); `compensate_on_cancel=False` makes a cancel skip the rollbacks.
    The function is returned unchanged, with its spec attached."""
    check_workflow_name(name, "workflow")

    def register(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise InvalidInput(
                "workflow",
                f"workflow {name!r}: {getattr(fn, '__qualname__', fn)!r} must be an "
                "`async def f(ctx: WorkflowContext, input)`",
            )
        if check:
            violations = check_workflow_code(fn)
            if violations:
                raise NondeterministicWorkflow(violations)
        install_guard()
        setattr(fn, WORKFLOW_ATTRIBUTE, WorkflowSpec(name, fn, compensate_on_cancel))
        return fn

    return register


@overload
def step(fn: F, /) -> F: ...
@overload
def step(
    *,
    name: str | None = None,
    max_attempts: int = 5,
    timeout: str | None = None,
    backoff: str = "1s",
    max_backoff: str = "5m",
    permanent: tuple[type[BaseException], ...] = (),
    expected: str | None = None,
) -> Callable[[F], F]: ...
def step(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    max_attempts: int = 5,
    timeout: str | None = None,
    backoff: str = "1s",
    max_backoff: str = "5m",
    permanent: tuple[type[BaseException], ...] = (),
    expected: str | None = None,
) -> F | Callable[[F], F]:
    """Declare a step: a function a workflow runs with `await ctx.run(f, ...)`, recorded once.

    It carries the job retry semantics: up to `max_attempts` attempts in all, a delay drawn
    from [0, min(max_backoff, backoff·2^attempt)] between them (full jitter), a `timeout` per
    attempt; `PermanentError` or any of the `permanent` exception types fails the step at
    once. A step runs at least once: make it idempotent. Its input and result are JSON data.
    `name` (default: the function's name) is its identity in histories. `expected` is how
    long it usually takes: a step running longer raises the watchdog's stuck-step alarm."""
    retry = RetryPolicy(
        base_ms=duration_ms(backoff, "backoff"),
        cap_ms=duration_ms(max_backoff, "max_backoff"),
        max_attempts=max_attempts,
    )
    timeout_ms = None if timeout is None else duration_ms(timeout, "timeout")
    expected_ms = None if expected is None else duration_ms(expected, "expected")

    def declare(function: F) -> F:
        info = StepInfo(
            name=name or function.__name__,
            ref=f"{function.__module__}:{function.__qualname__}",
            retry=retry,
            timeout_ms=timeout_ms,
            permanent=tuple(permanent),
            expected_ms=expected_ms,
        )
        setattr(function, STEP_ATTRIBUTE, info)
        return function

    return declare(fn) if fn is not None else declare


def fails_permanently(exc: BaseException, info: StepInfo) -> bool:
    """A step's exception that retrying cannot help: a `PermanentError`, or one of the types
    the step's `permanent=` names. Anything else is retryable (its retry policy decides
    whether attempts are left). The in-process runner and the worker judge by this."""
    return isinstance(exc, (PermanentError, *info.permanent))
