"""The author's API for workflows written as code: `@workflow` refuses code that is not
deterministic (a static check of the body, one line naming the function, the line and what to
use instead), the run-time guard stops what the check cannot see, and `@step` carries the job
retry semantics."""

from __future__ import annotations

import asyncio
import inspect
import random
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from tickwheel.core.codeflow import (
    HistoryEvent,
    NondeterministicCall,
    WorkflowRun,
    WorkflowStuck,
    in_workflow_code,
    replay,
)
from tickwheel.core.codeflow.tasks import task_job_type
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.sdk import (
    NondeterministicWorkflow,
    PermanentError,
    WorkflowContext,
    step,
    workflow,
)
from tickwheel.sdk.code_workflows import check_workflow_code
from tickwheel.sdk.jobs import validate_job


def line_of(fn: Any, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


async def reads_the_clock(ctx: WorkflowContext, _: Any) -> float:
    return time.time()


async def reads_now(ctx: WorkflowContext, _: Any) -> str:
    return datetime.now().isoformat()


async def draws(ctx: WorkflowContext, _: Any) -> float:
    return random.random()


async def makes_a_uuid(ctx: WorkflowContext, _: Any) -> str:
    return str(uuid4())


async def sleeps_for_real(ctx: WorkflowContext, _: Any) -> None:
    await asyncio.sleep(1)


async def opens_a_file(ctx: WorkflowContext, _: Any) -> str:
    with open(__file__) as f:
        return f.read()


async def starts_a_thread(ctx: WorkflowContext, _: Any) -> None:
    import threading

    threading.Thread(target=print).start()


async def calls_the_network(ctx: WorkflowContext, _: Any) -> None:
    import urllib.request

    urllib.request.urlopen("http://example.com")


async def hides_it_in_a_closure(ctx: WorkflowContext, _: Any) -> float:
    def helper() -> float:
        return time.monotonic()

    return helper()


@pytest.mark.parametrize(
    ("fn", "text", "call", "instead"),
    [
        (reads_the_clock, "time.time()", "time.time", "ctx.now()"),
        (reads_now, "datetime.now()", "datetime.now", "ctx.now()"),
        (draws, "random.random()", "random.random", "ctx.random()"),
        (makes_a_uuid, "uuid4()", "uuid4", "ctx.uuid4()"),
        (sleeps_for_real, "asyncio.sleep(1)", "asyncio.sleep", "ctx.sleep"),
        (opens_a_file, "open(__file__)", "open", "in a step"),
        (starts_a_thread, "threading.Thread", "threading.Thread", "in a step"),
        (calls_the_network, "urlopen(", "urllib.request.urlopen", "in a step"),
        (hides_it_in_a_closure, "time.monotonic()", "time.monotonic", "ctx.now()"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_registration_refuses_code_that_is_not_deterministic(
    fn: Any, text: str, call: str, instead: str
) -> None:
    with pytest.raises(NondeterministicWorkflow) as caught:
        workflow("w")(fn)
    error = caught.value
    message = str(error)
    assert "\n" not in message
    line = line_of(fn, text)
    assert message.startswith(
        f"{Path(__file__).resolve()}:{line}: workflow function {fn.__qualname__} calls {call}()"
    )
    assert instead in message
    assert isinstance(error, TickwheelError) and isinstance(error, ValueError)
    assert error.violations[0].line == line


def test_every_forbidden_call_is_listed() -> None:
    async def many(ctx: WorkflowContext, _: Any) -> None:
        time.time()
        random.random()
        await asyncio.sleep(0)

    assert [v.call for v in check_workflow_code(many)] == [
        "time.time",
        "random.random",
        "asyncio.sleep",
    ]
    with pytest.raises(NondeterministicWorkflow, match=r"\(and 2 more\)$"):
        workflow("many")(many)


def test_deterministic_code_is_accepted_and_returned_as_it_was() -> None:
    async def fine(ctx: WorkflowContext, order: dict[str, Any]) -> dict[str, Any]:
        stamp = ctx.now().isoformat()
        items = sorted(order.get("items", []))
        await ctx.sleep("1h")
        return {"at": stamp, "items": items, "n": len(items), "pick": ctx.random()}

    assert workflow("fine")(fine) is fine
    assert fine.__tickwheel_workflow__.name == "fine"  # type: ignore[attr-defined]


def test_check_false_skips_the_static_check() -> None:
    assert workflow("vouched", check=False)(reads_the_clock) is reads_the_clock


def test_a_workflow_must_be_async_and_named() -> None:
    def not_async(ctx: WorkflowContext, _: Any) -> None:
        return None

    with pytest.raises(InvalidInput, match="must be an `async def"):
        workflow("sync")(not_async)
    for name in ("  ", "two words", "a:b", "x" * 92):
        with pytest.raises(InvalidInput, match=r"accepted: 1 to 91 of A-Z a-z 0-9 _ \. -"):
            workflow(name)
    # The longest name accepted is one whose tasks' job type (`workflow:<name>`) is valid.
    assert validate_job(
        {"jobId": "j", "type": task_job_type("x" * 91), "runAt": "2030-01-01T00:00:00Z"}, 0
    )


def started(name: str, input: Any = None) -> list[HistoryEvent]:
    data = {"workflow_id": "w-1", "input": input}
    return [HistoryEvent("workflow_started", 0, name=name, data=data)]


def test_the_run_time_guard_stops_what_the_static_check_cannot_see() -> None:
    async def sneaky(ctx: WorkflowContext, _: Any) -> str:
        reader = open  # not a call the static check can name
        with reader(Path(__file__).with_name("orders.csv")) as f:
            return f.read()

    flow = workflow("sneaky")(sneaky)
    with pytest.raises(NondeterministicCall, match=r"open\(\) \(a file\); do it in a step"):
        replay(flow, started("sneaky"))


def test_an_import_inside_workflow_code_is_not_a_file_read(tmp_path: Path) -> None:
    async def imports(ctx: WorkflowContext, _: Any) -> str:
        import colorsys  # first imported here: the import system opens its file

        return colorsys.__name__

    async def writes(ctx: WorkflowContext, path: str) -> None:
        writer = open
        writer(path, "w").close()

    sys.modules.pop("colorsys", None)  # a real import, reading the module's file
    assert replay(workflow("imports")(imports), started("imports")).result == "colorsys"
    with pytest.raises(NondeterministicCall, match="open"):
        replay(workflow("writes")(writes), started("writes", str(tmp_path / "x.py")))


def test_the_guard_fails_the_activation_even_if_the_code_swallows_the_error() -> None:
    async def swallows(ctx: WorkflowContext, _: Any) -> str:
        pause = asyncio.sleep
        try:
            await pause(5)
        except Exception:
            return "swallowed"
        return "done"

    flow = workflow("swallows")(swallows)
    with pytest.raises(NondeterministicCall, match=r"asyncio\.sleep"):
        replay(flow, started("swallows"))


def test_a_busy_loop_is_stopped() -> None:
    async def spins(ctx: WorkflowContext, _: Any) -> None:
        while True:
            await asyncio.sleep(0)  # a bare yield: no timer, so the check lets it through

    flow = workflow("spins", check=False)(spins)
    with pytest.raises(WorkflowStuck, match="ran 1000 loop turns"):
        WorkflowRun(flow, max_turns=1000).feed(started("spins"))


def test_steps_and_the_callers_code_are_not_workflow_code() -> None:
    seen: list[bool] = []

    @step
    async def look(_: Any) -> bool:
        return in_workflow_code()

    async def looks(ctx: WorkflowContext, _: Any) -> None:
        seen.append(ctx.is_replaying)

    assert not in_workflow_code()
    replay(workflow("looks")(looks), started("looks"))
    assert asyncio.run(look(None)) is False
    assert seen == [False]


def test_step_carries_the_job_retry_semantics() -> None:
    class Declined(Exception):
        pass

    @step(max_attempts=7, timeout="30s", backoff="2s", max_backoff="1m", permanent=(Declined,))
    async def charge(order: dict[str, Any]) -> str:
        return "ok"

    info = charge.__tickwheel_step__  # type: ignore[attr-defined]
    assert info.name == "charge"
    assert (info.retry.max_attempts, info.retry.base_ms, info.retry.cap_ms) == (7, 2000, 60_000)
    assert info.timeout_ms == 30_000
    assert info.permanent == (Declined,)
    assert info.ref.endswith(":test_step_carries_the_job_retry_semantics.<locals>.charge")
    assert asyncio.run(charge({})) == "ok"  # still the function it was


def test_a_bare_step_and_a_named_one() -> None:
    @step
    async def plain(_: Any) -> None: ...

    @step(name="stable-name")
    async def renamed_later(_: Any) -> None: ...

    assert plain.__tickwheel_step__.name == "plain"  # type: ignore[attr-defined]
    assert renamed_later.__tickwheel_step__.name == "stable-name"  # type: ignore[attr-defined]
    assert plain.__tickwheel_step__.retry.max_attempts == 5  # type: ignore[attr-defined]


def test_a_bad_retry_setting_is_refused() -> None:
    with pytest.raises(InvalidInput, match="maxAttempts"):
        step(max_attempts=0)
    with pytest.raises(InvalidInput, match="timeout"):
        step(timeout="soon")


def test_permanent_error_is_the_sdk_s() -> None:
    assert issubclass(PermanentError, TickwheelError)
