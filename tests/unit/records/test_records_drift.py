"""`tickwheel.records` is generated from `schemas/`: a schema and its type never drift."""

from __future__ import annotations

import json
import shutil
import typing
from pathlib import Path

import pytest

from tickwheel import records
from tickwheel.adapters.avro import default_registry, encode
from tickwheel.adapters.avro._registry import find_schemas_dir
from tickwheel.adapters.avro.records_gen import (
    FAMILIES,
    drifted,
    family_of,
    generate,
    latest_schemas,
    target_dir,
    write,
)
from tickwheel.adapters.kafka.dead_letters import dead_letter_record

REGENERATE = "run python -m tickwheel.adapters.avro.records_gen"


def test_the_checked_in_package_is_what_the_generator_writes_for_todays_schemas() -> None:
    assert drifted(target_dir()) == [], (
        f"src/tickwheel/records/ has drifted from schemas/: {REGENERATE}"
    )


def test_every_record_has_a_type_whose_keys_are_its_latest_fields() -> None:
    for schema in latest_schemas(find_schemas_dir()):
        record_type = getattr(records, schema["name"])
        fields = [field["name"] for field in schema["fields"]]
        assert list(typing.get_type_hints(record_type)) == fields


def test_every_record_lives_in_its_familys_module_and_the_package_re_exports_every_name() -> None:
    for schema in latest_schemas(find_schemas_dir()):
        record_type = getattr(records, schema["name"])
        assert record_type.__module__ == f"tickwheel.records.{family_of(schema['name'])}"
    defined = set()
    for name in generate():
        if name != "__init__.py":
            module = __import__(f"tickwheel.records.{name[:-3]}", fromlist=["__all__"])
            defined |= set(module.__all__)
    assert set(records.__all__) == defined
    assert all(getattr(records, name) is not None for name in records.__all__)


def test_a_named_type_of_two_families_is_written_once_in_shared() -> None:
    # Priority is an enum of both ExecutionRequest and JobDefinition.
    files = generate()
    assert "Priority = Literal[" in files["shared.py"]
    assert [name for name, text in files.items() if "Priority = Literal[" in text] == ["shared.py"]
    assert "from tickwheel.records.shared import Priority" in files["jobs.py"]
    assert "from tickwheel.records.shared import Priority" in files["executions.py"]


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    schemas = tmp_path / "schemas"
    shutil.copytree(find_schemas_dir(), schemas)
    package = tmp_path / "records"
    write(package, schemas)
    assert drifted(package, schemas) == []
    return schemas, package


def test_a_planted_schema_drift_names_the_family_file_that_disagrees(tmp_path: Path) -> None:
    schemas, package = _copy(tmp_path)
    folder = schemas / "ExecutionEvent"
    highest = max(folder.glob("v*.avsc"), key=lambda p: int(p.stem[1:]))
    newer = json.loads(highest.read_text())
    newer["fields"].append({"name": "planted", "type": ["null", "string"], "default": None})
    (folder / f"v{int(highest.stem[1:]) + 1}.avsc").write_text(json.dumps(newer))

    assert drifted(package, schemas) == ["executions.py"]


def test_a_hand_edited_or_stray_file_is_drift(tmp_path: Path) -> None:
    schemas, package = _copy(tmp_path)
    timer = package / "timer.py"
    timer.write_text(timer.read_text().replace("    job_id: str\n", "    job_id: int\n", 1))
    (package / "leftover.py").write_text("")
    (package / "alerts.py").unlink()

    assert drifted(package, schemas) == ["alerts.py", "leftover.py", "timer.py"]


def test_a_record_without_a_family_is_refused_with_the_place_to_add_it(tmp_path: Path) -> None:
    schemas, _ = _copy(tmp_path)
    (schemas / "Orphan").mkdir()
    orphan = {"type": "record", "name": "Orphan", "fields": [{"name": "x", "type": "long"}]}
    (schemas / "Orphan" / "v1.avsc").write_text(json.dumps(orphan))

    with pytest.raises(ValueError, match="record Orphan has no family: add it to FAMILIES"):
        generate(schemas)


def test_every_family_names_only_records_that_exist() -> None:
    names = {schema["name"] for schema in latest_schemas(find_schemas_dir())}
    placed = [name for _, members in FAMILIES.values() for name in members]
    assert sorted(placed) == sorted(names)


def test_a_decoded_record_has_exactly_its_types_keys() -> None:
    """The type describes what `decode` returns: every key present, no other."""
    letter = dead_letter_record("t", 0, 7, "job", b"raw", "bad", "undecodable", 1)
    _, decoded = default_registry().decode(encode("DeadLetter", letter), expected="DeadLetter")
    assert set(decoded) == set(typing.get_type_hints(records.DeadLetter))
