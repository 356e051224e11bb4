"""The orchestrator builds whole typed records: every field its schema has, defaults the
schema's, so the bytes are what a partial record with the same values would encode to."""

from __future__ import annotations

import inspect
import typing

from tickwheel.adapters.avro import default_registry
from tickwheel.records import TimerCommand
from tickwheel.services.orchestrator.records import checkpoint_record, timer_command


def _schema_defaults(record: str) -> dict[str, object]:
    fields = default_registry().current(record).schema["fields"]
    return {f["name"]: f["default"] for f in fields if "default" in f}


def test_a_timer_commands_keyword_defaults_are_the_schemas() -> None:
    defaults = _schema_defaults("TimerCommand")
    keywords = inspect.signature(timer_command).parameters.values()
    for parameter in keywords:
        if parameter.kind is parameter.KEYWORD_ONLY:
            assert parameter.default == defaults[parameter.name], parameter.name


def test_a_timer_command_has_every_field_and_encodes_as_its_partial_form() -> None:
    command = timer_command("__wf/w/0", 5, "w", "c-1", "start_timer", timer_id="t", fire_at=9)
    assert list(command) == list(typing.get_type_hints(TimerCommand))
    defaults = _schema_defaults("TimerCommand")
    partial = {k: v for k, v in command.items() if k not in defaults or defaults[k] != v}
    registry = default_registry()
    assert registry.encode("TimerCommand", command) == registry.encode("TimerCommand", partial)


def test_a_checkpoint_is_a_whole_snapshot_record() -> None:
    record = checkpoint_record(3, {"workflows.inputs": 7}, 11)
    assert registry_round_trip("WorkflowSnapshot", record) == record


def registry_round_trip(name: str, value: typing.Mapping[str, object]) -> object:
    registry = default_registry()
    return registry.decode(registry.encode(name, value), expected=name)[1]
