"""The Avro schemas in `schemas/` as checked data.

Invariants: every `.avsc` parses with the reference `avro` library and carries the fields
DESIGN §13 names; the current version of every record reads every kept earlier version
(checked by the reference library *and* by decoding real bytes); the checker rejects
incompatible schemas; a record written by fastavro as single-object encoding is identified
and decoded by the reference library; released versions cannot be edited or deleted.
"""

from __future__ import annotations

import copy
import io
import json
import random
import shutil
import tomllib
from pathlib import Path
from typing import Any, cast

import avro.io
import avro.schema
import fastavro
import pytest
from fastavro.schema import to_parsing_canonical_form

from tickwheel.adapters.avro import (
    FINGERPRINT_LOCK,
    HEADER_SIZE,
    NAMESPACE,
    SCHEMAS_DIR_ENV,
    SINGLE_OBJECT_MARKER,
    SchemaLayoutError,
    SchemaRegistry,
    check_schemas,
    crc64_avro,
    find_schemas_dir,
    incompatibilities,
    load_schemas,
    parse_reference,
    update_lock,
)

REPO_SCHEMAS = Path(__file__).resolve().parents[4] / "schemas"
RECORDS = (
    "Alert",
    "ApiAuditEvent",
    "ApiKey",
    "Calendar",
    "DeadLetter",
    "DeadLetterResolution",
    "ExecutionControl",
    "ExecutionEvent",
    "ExecutionRequest",
    "IdempotencyRecord",
    "JobCommand",
    "JobDefinition",
    "JobVerdict",
    "JobWriterCheckpoint",
    "TimerCommand",
    "TimerState",
    "WorkflowDefinition",
    "WorkflowEvent",
    "WorkflowInput",
    "WorkflowSnapshot",
)
_TEXT = 'ab z0_-{}[]"\\é☃𝄞\n'


def sample_value(
    schema: Any, rnd: random.Random, named: dict[str, Any] | None = None, *, nulls: float = 0.3
) -> Any:
    """A random value valid for `schema` (a JSON schema as loaded from an `.avsc`).

    Deterministic for a seeded `rnd`; strings include non-ASCII and JSON-special characters;
    longs span the full 64-bit range so a width mistake shows.
    """
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in named:
            return sample_value(named[schema], rnd, named, nulls=nulls)
        if schema == "null":
            return None
        if schema == "boolean":
            return rnd.random() < 0.5
        if schema == "int":
            return rnd.randint(-(2**31), 2**31 - 1)
        if schema == "long":
            return rnd.choice([0, 1, -1, 1_767_225_600_000, rnd.randint(-(2**63), 2**63 - 1)])
        if schema == "double":
            return rnd.uniform(-1e9, 1e9)
        if schema == "string":
            return "".join(rnd.choice(_TEXT) for _ in range(rnd.randint(0, 12)))
        if schema == "bytes":
            return rnd.randbytes(rnd.randint(0, 16))
        raise AssertionError(f"sample_value does not know {schema!r}")
    if isinstance(schema, list):
        non_null = [s for s in schema if s != "null"]
        if "null" in schema and (not non_null or rnd.random() < nulls):
            return None
        return sample_value(rnd.choice(non_null), rnd, named, nulls=nulls)
    kind = schema["type"]
    if kind in ("record", "enum"):
        named[schema["name"]] = schema
        named[f"{schema.get('namespace', NAMESPACE)}.{schema['name']}"] = schema
    if kind == "record":
        return {
            f["name"]: sample_value(f["type"], rnd, named, nulls=nulls) for f in schema["fields"]
        }
    if kind == "enum":
        return rnd.choice(schema["symbols"])
    if kind == "array":
        return [
            sample_value(schema["items"], rnd, named, nulls=nulls) for _ in range(rnd.randint(0, 3))
        ]
    if kind == "map":
        return {
            sample_value("string", rnd): sample_value(schema["values"], rnd, named, nulls=nulls)
            for _ in range(rnd.randint(0, 3))
        }
    return sample_value(kind, rnd, named, nulls=nulls)


def reference_decode(body: bytes, writer: Any, reader: Any | None = None) -> Any:
    """Decode an Avro binary body with the reference library (resolving if `reader` is given)."""
    datum_reader = avro.io.DatumReader(
        parse_reference(writer), parse_reference(reader) if reader is not None else None
    )
    decoder = avro.io.BinaryDecoder(io.BytesIO(body))
    return datum_reader.read(decoder)


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return load_schemas(REPO_SCHEMAS)


def _schema_files() -> list[Path]:
    return sorted(REPO_SCHEMAS.glob("*/v*.avsc"))


# --- the files ------------------------------------------------------------------------


def test_every_declared_record_is_kept(registry: SchemaRegistry) -> None:
    assert set(registry.record_names()) == set(RECORDS)


@pytest.mark.parametrize("path", _schema_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_avsc_parses_with_the_reference_library(path: Path) -> None:
    schema = parse_reference(path.read_text(encoding="utf-8"))
    assert isinstance(schema, avro.schema.RecordSchema)
    assert schema.fullname == f"{NAMESPACE}.{path.parent.name}"


def _field_names(registry: SchemaRegistry, record: str) -> set[str]:
    return {f["name"] for f in registry.current(record).schema["fields"]}


def _field(registry: SchemaRegistry, record: str, name: str) -> dict[str, Any]:
    return next(f for f in registry.current(record).schema["fields"] if f["name"] == name)


def test_job_definition_has_the_design_13_fields_in_camel_case(registry: SchemaRegistry) -> None:
    design_13 = {
        "jobId", "type", "payload", "payloadTemplate", "runAt", "cron", "timezone", "priority",
        "maxAttempts", "idempotencyKey", "expectedMaxInterval", "jitter", "misfirePolicy",
        "overlapPolicy", "dstPolicy", "tenantId", "enabled",
    }  # fmt: skip
    assert design_13 <= _field_names(registry, "JobDefinition")
    assert {"version", "maxCatchUp", "createdAt", "updatedAt", "labels"} <= _field_names(
        registry, "JobDefinition"
    )
    assert _field(registry, "JobDefinition", "priority")["type"]["symbols"] == [
        "high",
        "normal",
        "low",
    ]
    assert _field(registry, "JobDefinition", "misfirePolicy")["type"]["symbols"] == [
        "catch_up", "coalesce", "skip",
    ]  # fmt: skip
    assert _field(registry, "JobDefinition", "overlapPolicy")["type"]["symbols"] == [
        "allow", "skip", "queue_one",
    ]  # fmt: skip


def test_execution_event_has_the_history_columns_of_design_13(registry: SchemaRegistry) -> None:
    columns = {
        "event_id", "event_time", "event_type", "job_id", "job_type", "tenant_id",
        "execution_id", "attempt", "scheduled_time", "fire_time", "worker_id", "error",
    }  # fmt: skip
    assert columns <= _field_names(registry, "ExecutionEvent")
    assert _field(registry, "ExecutionEvent", "event_type")["type"]["symbols"] == [
        "requested", "skipped", "leased", "heartbeat", "succeeded", "failed",
        "retry_scheduled", "dead_lettered", "fenced", "cancelled",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "fields"),
    [
        ("TimerState", {"job_id", "job_version", "last_scheduled_time", "last_fire_time",
                        "next_scheduled_time", "updated_at", "pending"}),
        ("ExecutionRequest", {"execution_id", "job_id", "job_version", "job_type", "tenant_id",
                              "priority", "attempt", "scheduled_time", "fire_time", "period_start",
                              "period_end", "payload", "max_attempts", "trigger", "late",
                              "requested_at", "lease_seconds", "heartbeat_seconds",
                              "max_run_seconds"}),
        ("WorkflowEvent", {"event_id", "event_time", "workflow_id", "definition_id",
                           "definition_version", "event_type", "step_id", "attempt", "data"}),
        ("Alert", {"alert_id", "event_time", "kind", "severity", "job_id", "tenant_id",
                   "message", "details"}),
        ("DeadLetter", {"dead_letter_id", "event_time", "reason", "source_topic",
                        "source_partition", "source_offset", "execution_id", "job_id",
                        "attempt", "error", "payload", "raw_value"}),
    ],
)  # fmt: skip
def test_event_records_have_their_fields(
    registry: SchemaRegistry, record: str, fields: set[str]
) -> None:
    assert fields <= _field_names(registry, record)


def test_a_request_written_before_max_run_seconds_reads_as_no_limit_of_its_own(
    registry: SchemaRegistry,
) -> None:
    assert _field(registry, "ExecutionRequest", "max_run_seconds")["type"] == ["null", "int"]
    v1 = registry.versions("ExecutionRequest")[0]
    datum = sample_value(v1.schema, random.Random(3))
    _, got = registry.decode(registry.encode("ExecutionRequest", datum, version=v1.version))
    assert got == {
        **datum,
        "max_run_seconds": None,
        "queue": None,
        "workflow_id": None,
        "step_id": None,
    }


def test_every_nullable_field_defaults_to_null(registry: SchemaRegistry) -> None:
    for name in registry.record_names():
        for f in registry.current(name).schema["fields"]:
            if isinstance(f["type"], list) and "null" in f["type"]:
                assert f["type"][0] == "null" and f.get("default", "missing") is None, (name, f)


def test_every_topic_value_schema_is_a_kept_record(registry: SchemaRegistry) -> None:
    topology = tomllib.loads((REPO_SCHEMAS.parent / "topology" / "topics.toml").read_text())
    named = {t["value_schema"] for t in topology["topic"]}
    assert named and named <= set(registry.record_names()), named


def test_the_repository_schemas_pass_every_check() -> None:
    assert check_schemas(REPO_SCHEMAS) == []


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


def _copy_schemas(tmp_path: Path) -> Path:
    dst = tmp_path / "schemas"
    shutil.copytree(REPO_SCHEMAS, dst)
    return dst


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
    root = _copy_schemas(tmp_path)
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
    root = _copy_schemas(tmp_path)
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
    root = _copy_schemas(tmp_path)
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
    root = _copy_schemas(tmp_path)
    edited = _v1(root, "Alert")
    edited["fields"].append({"name": "sneaky", "type": ["null", "string"], "default": None})
    _write(root, "Alert", 1, edited)
    problems = check_schemas(root)
    assert len(problems) == 1 and "a released version was edited" in problems[0], problems


def test_deleting_a_kept_version_is_reported(tmp_path: Path) -> None:
    root = _copy_schemas(tmp_path)
    shutil.rmtree(root / "WorkflowDefinition")
    problems = check_schemas(root)
    assert problems == [
        f"WorkflowDefinition v1: recorded in {FINGERPRINT_LOCK} but its file is gone; "
        "kept versions are never deleted"
    ]


def test_a_new_version_must_be_recorded(tmp_path: Path) -> None:
    root = _copy_schemas(tmp_path)
    n = _next(root, "Alert")
    _write(root, "Alert", n, _compatible_v2(_latest(root, "Alert")))
    problems = check_schemas(root)
    assert len(problems) == 1 and problems[0].startswith(f"Alert v{n}: not in {FINGERPRINT_LOCK}")
    update_lock(root)
    assert check_schemas(root) == []


def test_logical_types_are_refused(tmp_path: Path) -> None:
    root = _copy_schemas(tmp_path)
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
    root = _copy_schemas(tmp_path)
    text = json.dumps(content) if content else (root / "Alert" / "v1.avsc").read_text()
    (root / "Alert" / filename).write_text(text)
    with pytest.raises(SchemaLayoutError, match=problem.replace(".", r"\.")):
        load_schemas(root)


# --- interoperability with the reference implementation ---------------------------------


@pytest.mark.parametrize(
    ("text", "signed"),
    [
        ('"null"', 7195948357588979594),
        ('"boolean"', -6970731678124411036),
        ('"int"', 8247732601305521295),
        ('"long"', -3434872931120570953),
        ('"string"', -8142146995180207161),
        ('{"name":"foo","type":"fixed","size":15}', 1756455273707447556),
        (
            '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}',
            7843277075252814651,
        ),
    ],
)
def test_crc64_matches_the_avro_specification_vectors(text: str, signed: int) -> None:
    # Vectors from the Avro project's share/test/data/schema-tests.txt (Java signed longs).
    assert crc64_avro(text.encode()) == signed % 2**64
    canonical = to_parsing_canonical_form(fastavro.parse_schema(json.loads(text)))
    assert crc64_avro(canonical.encode()) == signed % 2**64


def test_records_written_by_fastavro_are_decoded_by_the_reference_library(
    registry: SchemaRegistry,
) -> None:
    rnd = random.Random(7)
    for name in registry.record_names():
        current = registry.current(name)
        reference = parse_reference(current.schema)
        assert reference.canonical_form == current.canonical_form
        assert reference.fingerprint("CRC-64-AVRO") == current.header[2:]
        for nulls in (0.0, 0.5, 1.0):
            datum = sample_value(current.schema, rnd, nulls=nulls)
            data = registry.encode(name, datum)
            assert data[:2] == SINGLE_OBJECT_MARKER
            assert data[2:HEADER_SIZE] == reference.fingerprint("CRC-64-AVRO")
            assert reference_decode(data[HEADER_SIZE:], current.schema) == datum


# --- finding the folder -----------------------------------------------------------------


def test_the_schemas_folder_is_found_from_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCHEMAS_DIR_ENV, raising=False)
    assert find_schemas_dir().resolve() == REPO_SCHEMAS
    assert set(load_schemas().record_names()) == set(RECORDS)


def test_the_env_override_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy_schemas(tmp_path)
    shutil.rmtree(root / "Alert")
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(root))
    assert find_schemas_dir() == root
    assert "Alert" not in load_schemas().record_names()
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(SchemaLayoutError, match=SCHEMAS_DIR_ENV):
        find_schemas_dir()
