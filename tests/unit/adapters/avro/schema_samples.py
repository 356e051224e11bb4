"""What the schema tests share: the repository's `schemas/` folder, the records it keeps,
random values valid for any schema, the reference library's decoding, and a scratch copy of
the folder to evolve or break."""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path
from typing import Any

import avro.io

from tickwheel.adapters.avro import NAMESPACE, parse_reference

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
    "TopologyChange",
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


def copy_schemas(tmp_path: Path) -> Path:
    """A copy of the repository's schemas (and their fingerprint lock) to change freely."""
    dst = tmp_path / "schemas"
    shutil.copytree(REPO_SCHEMAS, dst)
    return dst
