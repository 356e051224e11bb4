"""The public SDK: `tickwheel.sdk.__all__` is the supported surface, pinned here so that a
change to it is a decision someone makes, not a side effect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tickwheel
import tickwheel.sdk as sdk
from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.sdk.executions import cancel_record

PUBLIC = [
    "ChildFailed",
    "Divergence",
    "ExecutionCancelled",
    "ExecutionContext",
    "InvalidInput",
    "InvalidSchedule",
    "JobExists",
    "JobsClient",
    "NondeterministicWorkflow",
    "PermanentError",
    "PreviewRow",
    "RetryableError",
    "StepFailed",
    "TickwheelError",
    "UnknownJob",
    "WorkflowContext",
    "cancel",
    "job",
    "preview",
    "step",
    "workflow",
]


def test_the_public_names_are_exactly_these() -> None:
    assert sorted(sdk.__all__) == PUBLIC
    assert len(set(sdk.__all__)) == len(sdk.__all__)


def test_a_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from tickwheel.sdk import *", namespace)
    assert set(PUBLIC) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = sdk.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_has_a_docstring_of_its_own(name: str) -> None:
    value = getattr(sdk, name)
    # Its own: a class without one would otherwise show its base class's under help().
    doc = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
    assert doc and doc.strip(), f"tickwheel.sdk.{name} has no docstring"


def test_the_errors_share_the_one_root() -> None:
    for name in PUBLIC:
        value = getattr(sdk, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, TickwheelError), name


def test_the_package_says_it_is_typed() -> None:
    assert (Path(tickwheel.__file__).parent / "py.typed").is_file()


_PROBE = """
import json, sys
import tickwheel.sdk
on_import = sorted(sys.modules)
for name in tickwheel.sdk.__all__:
    getattr(tickwheel.sdk, name)
print(json.dumps({"on_import": on_import, "after_use": sorted(sys.modules)}))
"""


def _top(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_sdk_never_loads_the_clickhouse_client() -> None:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # -X importtime lists every module imported, one per line of stderr.
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert not _top(sorted(imported)) & {"clickhouse_connect", "chdb"}
    modules = json.loads(run.stdout)
    for stage in ("on_import", "after_use"):
        assert not _top(modules[stage]) & {"clickhouse_connect", "chdb"}, stage
    # Handler modules and previews import the SDK too: they should not pay for the clients.
    assert not _top(modules["on_import"]) & {"confluent_kafka", "fastavro", "avro"}


def test_a_cancel_record_names_the_execution_and_when() -> None:
    record = cancel_record("exec-9", now_ms=5, job_id="j", reason="r", control_id="c")
    assert record == {
        "control_id": "c",
        "execution_id": "exec-9",
        "job_id": "j",
        "kind": "cancel",
        "requested_at": 5,
        "reason": "r",
        "attempt": None,  # every attempt of it
    }
    assert cancel_record("exec-9", now_ms=5)["control_id"]


@pytest.mark.parametrize("blank", ["", "  "])
def test_cancel_refuses_a_blank_execution_id_before_reaching_kafka(blank: str) -> None:
    # No broker here: the refusal has to come before a producer is built.
    with pytest.raises(InvalidInput, match="execution_id"):
        sdk.cancel(blank, bootstrap="127.0.0.1:1", clock=FakeClock())
