"""The Avro schemas in `schemas/` as checked data.

Invariants: every `.avsc` parses with the reference `avro` library and carries the fields
DESIGN §13 names; a record written by fastavro as single-object encoding is identified and
decoded by the reference library; the folder is found from the install or the environment.
How versions evolve (compatibility, frozen releases, layout mistakes) is
`test_schema_evolution.py`.
"""

from __future__ import annotations

import json
import random
import shutil
import tomllib
from pathlib import Path
from typing import Any

import avro.schema
import fastavro
import pytest
from fastavro.schema import to_parsing_canonical_form

from tests.unit.adapters.avro.schema_samples import (
    RECORDS,
    REPO_SCHEMAS,
    copy_schemas,
    reference_decode,
    sample_value,
)
from tickwheel.adapters.avro import (
    HEADER_SIZE,
    NAMESPACE,
    SCHEMAS_DIR_ENV,
    SINGLE_OBJECT_MARKER,
    SchemaLayoutError,
    SchemaRegistry,
    check_schemas,
    crc64_avro,
    find_schemas_dir,
    load_schemas,
    parse_reference,
)


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
    root = copy_schemas(tmp_path)
    shutil.rmtree(root / "Alert")
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(root))
    assert find_schemas_dir() == root
    assert "Alert" not in load_schemas().record_names()
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(SchemaLayoutError, match=SCHEMAS_DIR_ENV):
        find_schemas_dir()
