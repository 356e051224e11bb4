"""The job author's side: the handler registry, the context, the built-in `noop`, `sleep` and
`fail` semantics, and how a handler's ending becomes an outcome."""

from __future__ import annotations

import json
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput
from tickwheel.jobtypes import BUILTIN_TYPES, builtin_registry
from tickwheel.jobtypes.basic import fail, sleep
from tickwheel.sdk import worker as sdk
from tickwheel.sdk.worker import (
    DuplicateJobType,
    ExecutionCancelled,
    ExecutionContext,
    HandlerRegistry,
    JobType,
    ModuleNotLoadable,
    PermanentError,
    RetryableError,
    UnknownJobType,
)
from tickwheel.services.worker.attempt import parse_payload, run_handler
from tickwheel.services.worker.events import outcome_event

T0 = 1_800_000_000_000


def request(**overrides: Any) -> dict[str, Any]:
    base = {
        "execution_id": "exec-1", "job_id": "job-1", "job_version": 1, "job_type": "noop",
        "tenant_id": "acme", "priority": "normal", "attempt": 1, "scheduled_time": T0,
        "fire_time": T0 + 1500, "period_start": T0 - 86_400_000, "period_end": T0,
        "payload": "{}", "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": T0 + 1600, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip
    base.update(overrides)
    return base


def context(payload: dict[str, Any] | None = None, attempt: int = 1) -> ExecutionContext:
    return ExecutionContext.from_request(request(attempt=attempt), payload or {})


# -- registry -------------------------------------------------------------------------------------
def test_the_decorator_registers_a_handler_by_type() -> None:
    registry = HandlerRegistry()

    @registry.job("send-invoice", lease_seconds=60, heartbeat_seconds=20)
    def send_invoice(ctx: ExecutionContext) -> str:
        """Send one invoice."""
        return ctx.execution_id

    job_type = registry.get("send-invoice")
    assert job_type.handler is send_invoice
    assert (job_type.lease_seconds, job_type.heartbeat_seconds) == (60, 20)
    assert job_type.description == "Send one invoice."
    assert "send-invoice" in registry and registry.names() == ("send-invoice",)


def test_an_unknown_type_names_what_the_worker_handles() -> None:
    with pytest.raises(UnknownJobType) as info:
        builtin_registry().get("nope")
    assert (
        str(info.value) == "unknown job type 'nope'; this worker handles: fail, http, noop, sleep"
    )
    assert isinstance(info.value, LookupError)


def test_type_names_are_unique() -> None:
    registry = HandlerRegistry([JobType("a", lambda ctx: None)])
    with pytest.raises(DuplicateJobType):
        registry.add(JobType("a", lambda ctx: 1))
    with pytest.raises(DuplicateJobType):
        builtin_registry().merged(HandlerRegistry([JobType("noop", lambda ctx: None)]))


def test_only_restricts_to_the_named_types() -> None:
    registry = builtin_registry()
    assert registry.names() == BUILTIN_TYPES
    assert registry.only(["sleep", "noop"]).names() == ("noop", "sleep")
    assert registry.only(None).names() == BUILTIN_TYPES
    with pytest.raises(UnknownJobType, match="this worker handles: fail, http, noop, sleep"):
        registry.only(["noop", "typo"])


def test_a_heartbeat_must_be_shorter_than_the_lease() -> None:
    with pytest.raises(InvalidInput, match="shorter than lease_seconds"):
        JobType("x", lambda ctx: None, lease_seconds=10, heartbeat_seconds=10)
    with pytest.raises(InvalidInput):
        JobType("x", lambda ctx: None, lease_seconds=0)
    with pytest.raises(InvalidInput):
        JobType("", lambda ctx: None)


def test_modules_register_with_the_default_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sdk, "registry", HandlerRegistry())
    name = f"user_jobs_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "from tickwheel.sdk.worker import job\n"
        "@job('report', lease_seconds=90, heartbeat_seconds=30)\n"
        "def report(ctx):\n    return {'attempt': ctx.attempt}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        sdk.load_modules([name])
        assert sdk.registry.names() == ("report",)
        assert sdk.registry.get("report").lease_seconds == 90
    finally:
        sys.modules.pop(name, None)
    with pytest.raises(ModuleNotLoadable, match="no_such_module"):
        sdk.load_modules(["no_such_module_xyz"])


# -- context --------------------------------------------------------------------------------------
def test_the_context_carries_the_request_as_the_handler_sees_it() -> None:
    ctx = ExecutionContext.from_request(request(attempt=2), {"k": "v"})
    assert ctx.execution_id == "exec-1" and ctx.attempt == 2
    assert ctx.scheduled_time == datetime.fromtimestamp(T0 / 1000, UTC)
    assert ctx.scheduled_time.tzinfo is UTC
    assert ctx.period_start == datetime.fromtimestamp((T0 - 86_400_000) / 1000, UTC)
    assert ctx.period_end == ctx.scheduled_time
    assert ctx.fire_time == datetime.fromtimestamp((T0 + 1500) / 1000, UTC)
    assert ctx.payload == {"k": "v"} and (ctx.job_id, ctx.tenant_id) == ("job-1", "acme")
    assert not ctx.cancelled
    ctx.cancel_event.set()
    assert ctx.cancelled
    with pytest.raises(ExecutionCancelled):
        ctx.raise_if_cancelled()


def test_wait_wakes_on_cancellation() -> None:
    ctx = context()
    threading.Timer(0.05, ctx.cancel_event.set).start()
    assert ctx.wait(10) is True
    assert context().wait(0) is False


def test_the_payload_must_be_a_json_object() -> None:
    assert parse_payload(request(payload='{"a": [1]}')) == {"a": [1]}
    with pytest.raises(PermanentError, match="not valid JSON"):
        parse_payload(request(payload="{oops"))
    with pytest.raises(PermanentError, match="JSON object"):
        parse_payload(request(payload="[1, 2]"))


# -- built-ins ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["retryable", "permanent"])
def test_fail_fails_the_first_n_attempts_then_succeeds(mode: str) -> None:
    error = PermanentError if mode == "permanent" else RetryableError
    for attempt in (1, 2):
        with pytest.raises(error, match=f"attempt {attempt} fails on purpose"):
            fail(context({"mode": mode, "times": 2}, attempt=attempt))
    assert fail(context({"mode": mode, "times": 2}, attempt=3)) == {"succeeded_on_attempt": 3}
    assert fail(context({"mode": mode, "times": 0}, attempt=1)) == {"succeeded_on_attempt": 1}


def test_fail_without_times_fails_every_attempt_and_defaults_to_retryable() -> None:
    for attempt in (1, 5, 50):
        with pytest.raises(RetryableError):
            fail(context({}, attempt=attempt))


@pytest.mark.parametrize("payload", [{"mode": "sometimes"}, {"times": -1}, {"times": "2"}])
def test_fail_rejects_a_bad_payload_permanently(payload: dict[str, Any]) -> None:
    with pytest.raises(PermanentError):
        fail(context(payload))


def test_sleep_stops_early_when_cancelled_and_checks_its_payload() -> None:
    ctx = context({"seconds": 30})
    threading.Timer(0.05, ctx.cancel_event.set).start()
    assert sleep(ctx) == {"slept": 30, "cancelled": True}
    assert sleep(context({"seconds": 0})) == {"slept": 0, "cancelled": False}
    for bad in ({"seconds": "1"}, {"seconds": -1}, {"seconds": True}):
        with pytest.raises(PermanentError):
            sleep(context(bad))


# -- outcomes -------------------------------------------------------------------------------------
def outcome_of(handler: Any, ctx: ExecutionContext | None = None) -> Any:
    return run_handler(JobType("t", handler), ctx or context(), FakeClock(), lambda: "because")


def test_outcomes_classify_how_the_handler_ended() -> None:
    succeeded = outcome_of(lambda ctx: {"rows": 3})
    assert (succeeded.event_type, succeeded.details["result"]) == ("succeeded", {"rows": 3})

    permanent = outcome_of(fail, context({"mode": "permanent"}))
    assert (permanent.event_type, permanent.error_kind) == ("failed", "permanent")
    assert permanent.error.startswith("PermanentError: fail: attempt 1")

    def crash(ctx: ExecutionContext) -> None:
        raise KeyError("missing")

    retryable = outcome_of(crash)
    assert (retryable.event_type, retryable.error_kind) == ("failed", "retryable")
    assert retryable.error == "KeyError: 'missing'"
    assert "crash" in retryable.details["traceback"]


def test_a_result_that_is_not_json_is_a_permanent_failure() -> None:
    outcome = outcome_of(lambda ctx: object())
    assert (outcome.event_type, outcome.error_kind) == ("failed", "permanent")
    assert "not JSON" in (outcome.error or "")
    assert json.loads(json.dumps(outcome.details))  # details stay JSON


def test_an_oversized_result_is_dropped_and_the_success_recorded() -> None:
    done: list[str] = []

    def big(ctx: ExecutionContext) -> dict[str, str]:
        done.append(ctx.execution_id)  # the side effect happened: failing would redo it
        return {"rows": "x" * (64 * 1024)}

    outcome = outcome_of(big)
    assert done == ["exec-1"]
    assert (outcome.event_type, outcome.error, outcome.error_kind) == ("succeeded", None, None)
    assert "result" not in outcome.details
    note = outcome.details["result_dropped"]
    assert "over the 64 KiB limit" in note and "not recorded" in note
    assert outcome.details["result_bytes"] == len(json.dumps({"rows": "x" * (64 * 1024)}))
    event = outcome_event(request(), outcome, worker_id="w1", event_time_ms=T0, unique="u")
    assert event["event_type"] == "succeeded"
    assert len(event["details"]) < 1024  # the note, not the result

    just_fits = "x" * (64 * 1024 - 2)  # with its quotes, exactly the limit
    kept = outcome_of(lambda ctx: just_fits)
    assert kept.details["result"] == just_fits and "result_dropped" not in kept.details


def test_cancellation_wins_over_whatever_the_handler_did_after_the_signal() -> None:
    def stops(ctx: ExecutionContext) -> None:
        ctx.cancel_event.set()
        ctx.raise_if_cancelled()

    def ignores(ctx: ExecutionContext) -> str:
        ctx.cancel_event.set()
        return "done anyway"

    def fails(ctx: ExecutionContext) -> None:
        ctx.cancel_event.set()
        raise RuntimeError("interrupted")

    for handler in (stops, ignores, fails):
        outcome = outcome_of(handler)
        assert (outcome.event_type, outcome.reason, outcome.error) == ("cancelled", "because", None)
