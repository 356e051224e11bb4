"""The record builders write whole records (decision 0158): every field of the type, the ones
a record does not use at the schema's defaults (so its bytes are those of the partial record
the code used to build, the encoder filling the same defaults), and it decodes back equal."""

from __future__ import annotations

import typing
from collections.abc import Mapping

import pytest

from tickwheel import records
from tickwheel.adapters.avro import decode_as, default_registry
from tickwheel.core.calendars import calendar_record
from tickwheel.core.definition import validate_definition
from tickwheel.core.watchdog import Incident, Transition, plain_alert
from tickwheel.sdk.executions import cancel_record
from tickwheel.services.orchestrator.records import checkpoint_record as workflow_checkpoint
from tickwheel.services.orchestrator.records import timer_command
from tickwheel.services.watchdog.records import checkpoint_record, incident_record

T0 = 1_767_225_600_000


def _incident() -> Incident:
    return Incident(
        fingerprint="f" * 16, kind="job_overdue", subject="job-1", number=1, seq=2,
        state="open", severity="warning", opened_at=T0, last_transition_at=T0 + 5,
        summary="late", message="job-1 is late", job_id="job-1", tenant_id="acme",
    )  # fmt: skip


# what -> (record, the builder, the fields it leaves to the schema's defaults)
LIFECYCLE = ("incident_id", "fingerprint", "transition", "state", "subject", "opened_at",
             "resolved_at", "acknowledged_by", "acknowledged_note", "acknowledged_at",
             "suppressed_by", "notify")  # fmt: skip
BUILT: dict[str, tuple[str, typing.Callable[[], Mapping[str, object]], tuple[str, ...]]] = {
    "plain_alert": (
        "Alert", lambda: plain_alert("a-1", T0, "workflow_alert", "info", "m"),
        ("job_id", "tenant_id", "details", *LIFECYCLE),
    ),
    "an incident's transition": (
        "Alert", lambda: Transition(_incident(), "opened", T0, {"why": "late"}).record(), (),
    ),
    "the watchdog's incident record": ("Alert", lambda: incident_record(_incident()), LIFECYCLE),
    "the watchdog's checkpoint": (
        "Alert", lambda: checkpoint_record({"t:0": 3}, T0, T0), ("job_id", "tenant_id", *LIFECYCLE),
    ),
    "a workflow's timer command": (
        "TimerCommand",
        lambda: timer_command("__wf/w/0", T0, "w", "c-1", "cancel_timer", timer_id="t"),
        ("range_start", "range_end", "execution_id", "data", "step_id", "attempt",
         "compensation", "job_type", "payload", "tenant_id", "max_attempts", "fire_at"),
    ),
    "a workflow partition's checkpoint": (
        "WorkflowSnapshot", lambda: workflow_checkpoint(2, {"workflows.inputs": 9}, T0), ("state",),
    ),
    "a cancel": (
        "ExecutionControl", lambda: cancel_record("x-1", now_ms=T0, control_id="c"),
        ("job_id", "reason", "attempt"),
    ),
    "a calendar": (
        "Calendar", lambda: calendar_record("uk", [20_454], version=1, now_ms=T0), ("description",),
    ),
    "a validated definition": (
        "JobDefinition",
        lambda: validate_definition({"jobId": "j", "type": "noop", "cron": "* * * * *"}, T0),
        ("runAt", "idempotencyKey", "queue", "schedules", "exclude", "calendar", "businessDays"),
    ),
}  # fmt: skip


def _defaults(record: str) -> dict[str, object]:
    fields = default_registry().current(record).schema["fields"]
    return {f["name"]: f["default"] for f in fields if "default" in f}


@pytest.mark.parametrize("what", sorted(BUILT))
def test_a_builder_writes_every_field_leaving_the_unused_at_the_schemas_defaults(
    what: str,
) -> None:
    name, build, unused = BUILT[what]
    record = build()
    record_type = getattr(records, name)
    assert set(record) == set(typing.get_type_hints(record_type))
    defaults = _defaults(name)
    # The bytes are the partial record's: what the encoder would have filled in is here.
    assert {f: record[f] for f in unused} == {f: defaults[f] for f in unused}
    registry = default_registry()
    assert decode_as(record_type, registry.encode(name, record), registry) == record
