"""Workflows written as code, from the worker's side (decision 0217, "The worker"):
`tickwheel worker --module M` serves two families of job types beside the registered ones.

* `workflow:<name>` — a *workflow task*: the instance's history since the worker's last
  answer goes in, the commands the code issues come out. Live `WorkflowRun`s stay in an LRU
  cache keyed by (workflow id, run) with the history length each has consumed, so a task
  whose `base` matches feeds only the new events; `base` 0 replays the whole history on a
  fresh run; any other base answers `missed` (the orchestrator then sends the whole history).
* `code:<module:qualname>` — one attempt of a step: the step's function, called with the
  arguments the history recorded. It resolves only to a plain function defined in a module
  the worker loaded, or in one of those modules' packages, already imported: a job type is
  data anyone who can create a job chooses, so it never names `os:system` into a call, and
  never makes the worker import anything.

`CodeWorkflowRegistry` is how the lanes find both: a `HandlerRegistry` that answers these
names too, so the execution path (lease, heartbeats, outcome, fencing, no-handler) is the
one every job type takes. `publish_definitions` makes the definitions topic hold a version
whose `codeVersion` is the digest of each workflow's module source.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import json
import logging
import math
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tickwheel.core.codeflow import (
    Activation,
    StepInfo,
    WorkflowRun,
    WorkflowSpec,
    events_from_json,
    events_to_json,
    step_info_of,
)
from tickwheel.core.codeflow.definition import CODE_KIND, CodeWorkflowDefinition
from tickwheel.core.codeflow.history import JsonObject
from tickwheel.core.codeflow.tasks import TASK_STEP
from tickwheel.errors import InvalidInput
from tickwheel.sdk.code_workflows import fails_permanently
from tickwheel.sdk.worker import (
    ExecutionContext,
    HandlerRegistry,
    JobType,
    ModuleNotLoadable,
    PermanentError,
    UnknownJobType,
)
from tickwheel.sdk.workflow_gate import workflows_in
from tickwheel.services.worker.attempt import MAX_RESULT_BYTES
from tickwheel.services.worker.settings import DEFAULT_WORKFLOW_CACHE

__all__ = [
    "CODE_PREFIX",
    "WORKFLOW_PREFIX",
    "CacheStats",
    "CodeWorkflowRegistry",
    "CodeWorkflows",
    "DefinitionVersions",
    "is_code_job_type",
    "module_digest",
    "publish_definitions",
    "resume_parked",
]

log = logging.getLogger("tickwheel.worker")

WORKFLOW_PREFIX = "workflow:"
CODE_PREFIX = "code:"
# What a job type name may hold (`JobType` refuses longer ones): a longer `code:` ref has
# no handler here, rather than an error inside the lane's lookup.
_MAX_JOB_TYPE = 100


def is_code_job_type(name: str) -> bool:
    """Whether `name` is one of the job types this module resolves (by its prefix)."""
    return name.startswith((WORKFLOW_PREFIX, CODE_PREFIX))


def module_digest(module: types.ModuleType) -> str:
    """The code version of a module: the first 16 hex digits of the sha256 of its source.
    Two workers with the same file agree; any edit of it is a new version."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as exc:
        raise InvalidInput(
            "--module",
            f"module {module.__name__!r} has no readable source to digest ({exc}); accepted: "
            "a module loaded from a .py file",
        ) from None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@dataclass(slots=True)
class CacheStats:
    """What the run cache did, counted since the worker started (logged, read by tests)."""

    hits: int = 0  # a task whose base matched a live run: only its new events were fed
    replays: int = 0  # a task with base 0: a fresh run replayed the whole history
    misses: int = 0  # a task whose base matched nothing here: answered `missed`
    evictions: int = 0  # runs dropped for the bound (not the ended or failed ones)


@dataclass(slots=True)
class _Live:
    run: WorkflowRun
    consumed: int  # history events fed to `run`: its inputs, and the commands answered


class CodeVersionDeclined(Exception):
    """A task this worker's code cannot answer for an instance that started on other code: a
    retryable failure, so that a worker of the instance's own code may take it (decision
    0218)."""


class _Task:
    """A workflow task's payload, checked: each field named when it is not what the
    contract (decision 0217, "The instance") says."""

    __slots__ = ("base", "code_version", "events", "run", "task", "workflow", "workflow_id")

    def __init__(self, name: str, payload: Mapping[str, Any]) -> None:
        workflow = payload.get("workflow")
        if workflow != name:
            raise PermanentError(
                f"workflow task payload: workflow is {workflow!r}; accepted: {name!r} "
                f"(the workflow its job type names)"
            )
        self.workflow = name
        workflow_id = payload.get("workflow_id")
        if not isinstance(workflow_id, str) or not workflow_id:
            raise PermanentError(
                f"workflow task payload: workflow_id is {workflow_id!r}; accepted: a "
                "non-empty string"
            )
        self.workflow_id = workflow_id
        self.run = _whole(payload, "run", 1)
        self.task = _whole(payload, "task", 0)
        self.base = _whole(payload, "base", 0)
        code_version = payload.get("code_version")
        self.code_version = code_version if isinstance(code_version, str) else None
        raw = payload.get("events")
        if not isinstance(raw, list):
            raise PermanentError(
                f"workflow task payload: events is {type(raw).__name__}; accepted: a list of "
                "history events"
            )
        try:
            self.events = events_from_json(raw)
        except (ValueError, TypeError) as exc:
            raise PermanentError(f"workflow task payload: events: {_one_line(exc)}") from None


def _whole(payload: Mapping[str, Any], key: str, minimum: int) -> int:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PermanentError(
            f"workflow task payload: {key} is {value!r}; accepted: a whole number from {minimum}"
        )
    return value


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class CodeWorkflows:
    """The workflows and steps of the modules a worker loaded, and the handlers that run
    them. Thread-safe: the lanes' slot threads answer tasks at once (one run is fed by one
    thread at a time: it leaves the cache while it is fed)."""

    def __init__(
        self,
        modules: Sequence[types.ModuleType],
        cache_size: int = DEFAULT_WORKFLOW_CACHE,
    ) -> None:
        if cache_size < 1:
            raise InvalidInput("cache_size", f"{cache_size}; accepted: a whole number from 1")
        self.modules = tuple(modules)
        self.workflows: dict[str, WorkflowSpec] = workflows_in(*self.modules)
        self.cache_size = cache_size
        self.stats = CacheStats()
        self._names = frozenset(m.__name__ for m in self.modules)
        # A loaded module's package (itself, for a package): the modules it imports from
        # there are the author's (steps beside the workflows), anything else is not.
        self._packages = frozenset(
            package
            for m in self.modules
            if (package := m.__name__ if hasattr(m, "__path__") else m.__package__ or "")
        )
        self._runs: OrderedDict[tuple[str, int], _Live] = OrderedDict()
        self._lock = threading.Lock()
        self._types: dict[str, JobType] = {}
        self._versions: dict[str, str] | None = None
        for name, spec in self.workflows.items():
            job_type = f"{WORKFLOW_PREFIX}{name}"
            self._types[job_type] = JobType(
                job_type,
                self._task_handler(spec),
                description=f"a task of code workflow {name!r}: replay, answer its commands",
            )

    @classmethod
    def load(cls, names: Iterable[str], cache_size: int = DEFAULT_WORKFLOW_CACHE) -> CodeWorkflows:
        """Import the named modules (cached when `@job` loading imported them already)."""
        modules = []
        for name in names:
            try:
                modules.append(importlib.import_module(name))
            except ImportError as exc:
                raise ModuleNotLoadable(name, str(exc)) from exc
        return cls(modules, cache_size)

    # -- job types ---------------------------------------------------------------------------

    def workflow_types(self) -> tuple[str, ...]:
        return tuple(sorted(self._types))

    def job_type(self, name: str) -> JobType | None:
        """The handler of `workflow:<name>` or `code:<ref>`; None for anything this worker
        does not hold (the lane then takes its no-handler path)."""
        with self._lock:
            found = self._types.get(name)
        if found is not None or not name.startswith(CODE_PREFIX) or len(name) > _MAX_JOB_TYPE:
            return found
        fn = self.resolve(name.removeprefix(CODE_PREFIX))
        if fn is None:
            return None  # not remembered: a stream of made-up refs must not grow the map
        info = step_info_of(fn)
        limit = None if info.timeout_ms is None else max(1, math.ceil(info.timeout_ms / 1000))
        job_type = JobType(
            name,
            _step_handler(fn, info),
            description=f"step {info.name!r} of a code workflow",
            # The step's per-attempt timeout is the attempt's run limit: past it the worker
            # fails the attempt as retryable, as any handler that overruns.
            max_run_seconds=limit,
        )
        with self._lock:
            return self._types.setdefault(name, job_type)

    def resolve(self, ref: str) -> Callable[..., Any] | None:
        """The function `module:qualname` names, if the module is one of ours and imported
        already, and the function is defined there under that name (a function imported
        into our module from elsewhere is refused: its ref names its own module)."""
        module_name, sep, qualname = ref.partition(":")
        if not sep or not qualname or not self._ours(module_name):
            return None
        module = sys.modules.get(module_name)  # never imported from a ref
        if module is None:
            return None
        target: Any = module
        for part in qualname.split("."):
            if not part.isidentifier():
                return None  # `<locals>`: not reachable from the module
            target = getattr(target, part, None)
        if not inspect.isfunction(target):
            return None
        if target.__module__ != module_name or target.__qualname__ != qualname:
            return None
        return target

    def _ours(self, module_name: str) -> bool:
        return module_name in self._names or any(
            module_name.startswith(package + ".") for package in self._packages
        )

    # -- workflow tasks ----------------------------------------------------------------------

    def _task_handler(self, spec: WorkflowSpec) -> Callable[[ExecutionContext], Any]:
        def handle(ctx: ExecutionContext) -> JsonObject:
            return self.answer(spec, ctx.payload)

        return handle

    def answer(self, spec: WorkflowSpec, payload: Mapping[str, Any]) -> JsonObject:
        """Answer one workflow task (the task execution's result): the commands the code
        issues after the task's events, or `missed`. Raises `PermanentError` when the
        activation raised (the run is dropped) or the payload is not a task's."""
        task = _Task(spec.name, payload)
        key = (task.workflow_id, task.run)
        with self._lock:
            live = self._runs.pop(key, None)
            if task.base == 0:
                self.stats.replays += 1
            elif live is not None and live.consumed == task.base:
                self.stats.hits += 1
            else:
                self.stats.misses += 1
                if live is not None:  # a stale or repeated task: the run stays as it was
                    self._runs[key] = live
                return {"task": task.task, "missed": True}
        if task.base == 0:
            if live is not None:
                live.run.close()
            live = _Live(WorkflowRun(spec), 0)
        assert live is not None
        try:
            activation = live.run.feed(task.events)
            # The orchestrator appends these commands to the history right after the
            # task's events, and the next task starts past them: the run consumes them now,
            # matching its own decisions.
            live.run.feed(activation.commands)
            answer = _answer(task, activation)
            size = len(json.dumps(answer, allow_nan=False))
        except Exception as exc:  # Divergence, NondeterministicCall, WorkflowStuck, a bug
            live.run.close()
            log.warning(
                "workflow task failed",
                extra={
                    "action": "workflow_task_failed",
                    "workflow": spec.name,
                    "workflow_id": task.workflow_id,
                    "run": task.run,
                    "task": task.task,
                    "error": _one_line(exc),
                },
            )
            mine = self.code_versions().get(spec.name)
            if task.code_version is not None and task.code_version != mine:
                # Not the code the instance started on: another worker may still have that
                # code, so the task is declined (retryable: sent again, to whoever takes it)
                # rather than failed; after the fold's bound, the instance parks as below.
                raise CodeVersionDeclined(
                    f"code version {mine} cannot run {task.workflow_id} (started on "
                    f"{task.code_version}): {_one_line(exc)}"
                ) from exc
            raise PermanentError(_one_line(exc)) from exc
        if size > MAX_RESULT_BYTES:
            live.run.close()
            raise PermanentError(
                f"the answer to task {task.task} of {task.workflow_id} is {size} bytes of JSON, "
                f"over the {MAX_RESULT_BYTES // 1024} KiB an execution's result may hold; keep "
                "step inputs, results and signal payloads small (store large data elsewhere)"
            )
        if activation.ended:
            live.run.close()  # its instance goes on in a new run, or not at all
            return answer
        live.consumed = task.base + len(task.events) + len(activation.commands)
        self._keep(key, live)
        return answer

    def _keep(self, key: tuple[str, int], live: _Live) -> None:
        dropped: list[_Live] = []
        with self._lock:
            replaced = self._runs.pop(key, None)  # fed meanwhile by a repeated base-0 task
            if replaced is not None:
                dropped.append(replaced)
            self._runs[key] = live
            while len(self._runs) > self.cache_size:
                dropped.append(self._runs.popitem(last=False)[1])
                self.stats.evictions += 1
        for old in dropped:
            old.run.close()

    def live_runs(self) -> list[tuple[str, int]]:
        """The (workflow id, run) of every cached run, least recently answered first."""
        with self._lock:
            return list(self._runs)

    def consumed(self, workflow_id: str, run: int = 1) -> int | None:
        """The history length the cached run of (workflow id, run) has consumed, if any."""
        with self._lock:
            live = self._runs.get((workflow_id, run))
            return None if live is None else live.consumed

    # -- definitions -------------------------------------------------------------------------

    def code_versions(self) -> dict[str, str]:
        """Each workflow's code version: the digest of the module that defines it, as it was
        loaded (taken once: the source file edited under a running worker is not its code)."""
        if self._versions is None:
            self._versions = {
                name: module_digest(sys.modules[spec.fn.__module__])
                for name, spec in sorted(self.workflows.items())
            }
        return dict(self._versions)


def _answer(task: _Task, activation: Activation) -> JsonObject:
    return {
        "task": task.task,
        "base": task.base,
        "commands": events_to_json(activation.commands),
        "status": activation.status,
        "result": activation.result,
        "error": activation.error,
        "query": activation.query,
        "waiting_on": list(activation.waiting_on),
    }


def _step_handler(fn: Callable[..., Any], info: StepInfo) -> Callable[[ExecutionContext], Any]:
    def run_step(ctx: ExecutionContext) -> Any:
        args = ctx.payload.get("args", [])
        if not isinstance(args, list):
            raise PermanentError(
                f"step {info.name!r}: args is {type(args).__name__}; accepted: a list of the "
                "step's arguments"
            )
        try:
            value = fn(*args)
            if inspect.isawaitable(value):
                # On the attempt's slot thread: a loop of its own for as long as it runs.
                value = asyncio.run(_awaited(value))
        except Exception as exc:
            if not isinstance(exc, PermanentError) and fails_permanently(exc, info):
                raise PermanentError(_one_line(exc)) from exc
            raise  # PermanentError as it is; anything else retryable
        return value

    return run_step


async def _awaited(value: Any) -> Any:
    return await value


class CodeWorkflowRegistry(HandlerRegistry):
    """The registered job types, plus `workflow:<name>` and `code:<ref>` from `code`: what
    the lanes look job types up in. A name neither holds is unknown, as in any registry."""

    def __init__(self, registered: HandlerRegistry, code: CodeWorkflows) -> None:
        super().__init__(registered)
        self.code = code

    def _dynamic(self, name: object) -> JobType | None:
        if not isinstance(name, str) or not is_code_job_type(name):
            return None
        return self.code.job_type(name)

    def get(self, name: str) -> JobType:
        if super().__contains__(name):
            return super().get(name)
        found = self._dynamic(name)
        if found is None:
            raise UnknownJobType(name, self.names())
        return found

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or self._dynamic(name) is not None

    def names(self) -> tuple[str, ...]:
        """The registered names and the workflows' (`code:` refs resolve on demand)."""
        return tuple(sorted({*super().names(), *self.code.workflow_types()}))

    def __iter__(self) -> Iterator[JobType]:
        return iter([self.get(n) for n in self.names()])

    def __len__(self) -> int:
        return len(self.names())


class DefinitionVersions(Protocol):
    """The definitions topic as `publish_definitions` needs it (`WorkflowsClient` is one)."""

    def definitions(
        self, definition_id: str | None = None
    ) -> dict[tuple[str, int], JsonObject]: ...

    def define(self, document: JsonObject, *, actor: str | None = None) -> JsonObject: ...


def publish_definitions(
    code: CodeWorkflows, versions: DefinitionVersions, actor: str | None = None
) -> list[CodeWorkflowDefinition]:
    """Make the catalogue hold, for each workflow of `code`, a latest version whose
    `codeVersion` is its module's digest: publish version latest+1 when it differs (or none
    exists). Returns what was published. A name whose latest version is a DAG definition is
    refused: a workflow name belongs to one kind."""
    published = []
    for name, code_version in code.code_versions().items():
        known = versions.definitions(name)
        latest = max((v for (d, v) in known if d == name), default=0)
        if latest:
            body = known[(name, latest)]
            if body.get("kind") != CODE_KIND:
                raise InvalidInput(
                    "workflow",
                    f"{name!r} is published as a DAG definition (v{latest}); accepted: a code "
                    "workflow name no DAG definition uses",
                )
            if body.get("codeVersion") == code_version:
                continue
        definition = CodeWorkflowDefinition(name, latest + 1, code_version)
        versions.define(definition.to_json(), actor=actor)
        log.info(
            "code workflow definition published",
            extra={
                "action": "code_definition_published",
                "workflow": name,
                "version": definition.version,
                "code_version": code_version,
            },
        )
        published.append(definition)
    return published


class ParkedInstances(Protocol):
    """The instances `resume_parked` asks again (`WorkflowsClient` is one)."""

    def list(self, status: str | None = None) -> list[JsonObject]: ...

    def retry_step(self, workflow_id: str, step: str, *, actor: str) -> None: ...


def resume_parked(instances: ParkedInstances, workflows: Iterable[str], actor: str) -> list[str]:
    """New code for `workflows` is a fix's chance: every instance of theirs that is parked
    (`blocked`) is sent its workflow task again (`retry-step ID @task`), replayed from the
    start against the code now running. One that still diverges parks again, with its alert;
    one blocked for another reason (a failed rollback) ignores the retry. Returns the ids."""
    names = set(workflows)
    resumed = [
        row["workflowId"] for row in instances.list("blocked") if row["definitionId"] in names
    ]
    for workflow_id in resumed:
        instances.retry_step(workflow_id, TASK_STEP, actor=actor)
    if resumed:
        log.info(
            "parked code workflow instances sent to the new code",
            extra={"action": "code_instances_resumed", "count": len(resumed)},
        )
    return resumed
