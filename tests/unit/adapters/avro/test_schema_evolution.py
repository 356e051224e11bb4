"""How the Avro schemas in `schemas/` may change, checked on copies of the folder.

Invariants: the current version of every record reads every kept earlier version (checked by
the reference library *and* by decoding real bytes); an evolved version resolves old records
with its defaults; the checker rejects incompatible schemas, logical types and layout
mistakes; released versions cannot be edited or deleted, and a new one must be recorded.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from tests.unit.adapters.avro.schema_samples import (
    RECORDS,
    REPO_SCHEMAS,
    copy_schemas,
    reference_decode,
    sample_value,
)
from tickwheel.adapters.avro import (
    FINGERPRINT_LOCK,
    HEADER_SIZE,
    NAMESPACE,
    SchemaLayoutError,
    SchemaRegistry,
    check_schemas,
    incompatibilities,
    load_schemas,
    update_lock,
)


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return load_schemas(REPO_SCHEMAS)


# --- compatibility --------------------------------------------------------------------


def test_current_version_reads_every_kept_version_for_real(registry: SchemaRegistry) -> None:
    """Reference checker says compatible, and real bytes from each kept version decode.

    The expected value is the reference library's own resolution of the same body, so the
    two implementations must agree.
    """
    rnd = random.Random(20)
    for name in registry.record_names():
        current = registry.current(name)
        for older in registry.versions(name):
            assert incompatibilities(current.schema, older.schema) == (), (name, older.version)
            for _ in range(25):
                datum = sample_value(older.schema, rnd)
                data = registry.encode(name, datum, version=older.version)
                assert data[:HEADER_SIZE] == older.header
                got_name, got = registry.decode(data, expected=name)
                assert got_name == name
                assert got == reference_decode(data[HEADER_SIZE:], older.schema, current.schema)


def _v1(root: Path, record: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads((root / record / "v1.avsc").read_text()))


def _next(root: Path, record: str) -> int:
    """The version number a new `record` version would take (real versions are kept)."""
    return 1 + max(int(path.stem[1:]) for path in (root / record).glob("v*.avsc"))


def _latest(root: Path, record: str) -> dict[str, Any]:
    path = root / record / f"v{_next(root, record) - 1}.avsc"
    return cast(dict[str, Any], json.loads(path.read_text()))


def _write(root: Path, record: str, version: int, schema: dict[str, Any]) -> None:
    (root / record / f"v{version}.avsc").write_text(json.dumps(schema, indent=2))


def _compatible_v2(v1: dict[str, Any]) -> dict[str, Any]:
    """v1 plus a field with a default, and one more symbol on every enum: the allowed moves."""
    v2 = copy.deepcopy(v1)
    for f in v2["fields"]:
        if isinstance(f["type"], dict) and f["type"]["type"] == "enum":
            f["type"]["symbols"].append("added_in_v2")
    v2["fields"].append({"name": "added_in_v2", "type": "string", "default": "fresh"})
    return v2


def test_an_evolved_version_resolves_old_records_with_defaults(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    kept = load_schemas(root)
    latest = {record: kept.current(record).version for record in RECORDS}
    for record in RECORDS:
        _write(root, record, latest[record] + 1, _compatible_v2(kept.current(record).schema))
    assert [line.split()[:2] for line in update_lock(root)] == [
        [r, f"v{latest[r] + 1}"] for r in RECORDS
    ]
    assert check_schemas(root) == []

    evolved = load_schemas(root)
    rnd = random.Random(2)
    for record in RECORDS:
        old, new_version = evolved.versions(record)[-2:]
        assert evolved.current(record) is new_version and old.fingerprint != new_version.fingerprint
        datum = sample_value(old.schema, rnd)
        name, got = evolved.decode(
            evolved.encode(record, datum, version=old.version), expected=record
        )
        assert name == record
        assert got == {**datum, "added_in_v2": "fresh"}
        new = {**sample_value(new_version.schema, rnd), "added_in_v2": "new value"}
        assert evolved.decode(evolved.encode(record, new))[1] == new


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ("add a field without default", "reader_field_missing_default_value"),
        ("change long to string", "type_mismatch"),
        ("drop an enum symbol", "missing_enum_symbols"),
    ],
)
def test_the_checker_rejects_an_incompatible_version(
    tmp_path: Path, change: str, kind: str
) -> None:
    root = copy_schemas(tmp_path)
    # The next version after the latest one kept, made incompatible with it.
    latest = load_schemas(root).current("JobDefinition")
    v1, n = dict(latest.schema), latest.version
    v2 = copy.deepcopy(v1)
    fields = {f["name"]: f for f in v2["fields"]}
    if change == "add a field without default":
        v2["fields"].append({"name": "owner", "type": "string"})
    elif change == "change long to string":
        fields["version"]["type"] = "string"
    else:
        fields["priority"]["type"]["symbols"].remove("low")
    _write(root, "JobDefinition", n + 1, v2)
    update_lock(root)

    why = incompatibilities(v2, v1)
    assert why and all(kind.upper() in w.upper() for w in why), why
    problems = check_schemas(root)
    assert problems and all(
        p.startswith(f"JobDefinition: v{n + 1} cannot read records written with v")
        for p in problems
    ), problems
    assert incompatibilities(v1, v1) == ()


def test_an_unchecked_incompatible_version_fails_decoding_loudly(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    v1 = _latest(root, "Alert")
    released = _next(root, "Alert") - 1  # the latest real version, which v1 here is
    v2 = {**v1, "fields": [*v1["fields"], {"name": "owner", "type": "string"}]}
    _write(root, "Alert", released + 1, v2)
    reg = load_schemas(root)
    data = reg.encode("Alert", sample_value(v1, random.Random(1)), version=released)
    with pytest.raises(ValueError, match="schema resolution failed"):
        reg.decode(data)


# --- released versions are frozen --------------------------------------------------------


def test_editing_a_released_version_is_reported(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    edited = _v1(root, "Alert")
    edited["fields"].append({"name": "sneaky", "type": ["null", "string"], "default": None})
    _write(root, "Alert", 1, edited)
    problems = check_schemas(root)
    assert len(problems) == 1 and "a released version was edited" in problems[0], problems


def test_deleting_a_kept_version_is_reported(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    shutil.rmtree(root / "WorkflowDefinition")
    problems = check_schemas(root)
    assert problems == [
        f"WorkflowDefinition v1: recorded in {FINGERPRINT_LOCK} but its file is gone; "
        "kept versions are never deleted"
    ]


def test_a_new_version_must_be_recorded(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    n = _next(root, "Alert")
    _write(root, "Alert", n, _compatible_v2(_latest(root, "Alert")))
    problems = check_schemas(root)
    assert len(problems) == 1 and problems[0].startswith(f"Alert v{n}: not in {FINGERPRINT_LOCK}")
    update_lock(root)
    assert check_schemas(root) == []


def test_logical_types_are_refused(tmp_path: Path) -> None:
    root = copy_schemas(tmp_path)
    v2 = _compatible_v2(_latest(root, "Alert"))
    v2["fields"][-1] = {
        "name": "added_in_v2",
        "type": {"type": "long", "logicalType": "timestamp-millis"},
        "default": 0,
    }
    _write(root, "Alert", _next(root, "Alert"), v2)
    update_lock(root)
    assert any("uses a logicalType" in p for p in check_schemas(root))


@pytest.mark.parametrize(
    ("filename", "content", "problem"),
    [
        ("v01.avsc", None, "must be named v<N>.avsc"),
        ("V2.avsc", None, "must be named v<N>.avsc"),
        ("v2.avsc", {"type": "record", "name": "Other", "namespace": NAMESPACE, "fields": []},
         "expected io.tickwheel.Alert"),
        ("v2.avsc", {"type": "record", "name": "Alert", "namespace": NAMESPACE,
                     "fields": [{"name": "n", "type": "int", "default": "x"}]},
         "not a valid Avro schema"),
    ],
)  # fmt: skip
def test_layout_mistakes_are_refused(
    tmp_path: Path, filename: str, content: dict[str, Any] | None, problem: str
) -> None:
    root = copy_schemas(tmp_path)
    text = json.dumps(content) if content else (root / "Alert" / "v1.avsc").read_text()
    (root / "Alert" / filename).write_text(text)
    with pytest.raises(SchemaLayoutError, match=problem.replace(".", r"\.")):
        load_schemas(root)
