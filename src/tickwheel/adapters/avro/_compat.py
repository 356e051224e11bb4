"""Schema checks with the Apache `avro` reference library, for tests, CI and start-up.

The codec runs on fastavro; these checks deliberately use the *other* implementation so a
mistake in one is caught by the second: every `.avsc` must parse with the reference
library, both libraries must agree on its fingerprint, the current version of each record
must be able to read every kept earlier version, and no kept version may have changed
since it was recorded in `schemas/fingerprints.json` (docs/decisions/0021).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from tickwheel.adapters.avro._registry import (
    SchemaLayoutError,
    SchemaVersion,
    find_schemas_dir,
    format_fingerprint,
    iter_schema_files,
    load_version,
)

FINGERPRINT_LOCK = "fingerprints.json"

# The reference library's checker is unannotated; typing it as Any keeps mypy quiet here only.
_Checker: Any = ReaderWriterCompatibilityChecker


def parse_reference(schema: Mapping[str, Any] | str) -> avro.schema.Schema:
    """Parse a schema (a JSON string or its decoded mapping) with the reference library."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return avro.schema.parse(text)


def incompatibilities(
    reader: Mapping[str, Any] | str, writer: Mapping[str, Any] | str
) -> tuple[str, ...]:
    """Why data written with `writer` cannot be read with `reader`; empty when it can.

    This is the reference library's reader/writer check (`avro.compatibility`), the same
    rules Avro schema resolution applies: a reader field missing from the writer needs a
    default, types must promote, the reader's enums must hold the writer's symbols.
    """
    result = _Checker().get_compatibility(parse_reference(reader), parse_reference(writer))
    if result.compatibility is SchemaCompatibilityType.compatible:
        return ()
    kinds = ", ".join(sorted(k.name for k in result.incompatibilities))
    where = ", ".join(sorted(result.locations))
    return tuple(f"{kinds} at {where}: {m}" for m in sorted(result.messages))


def _has_logical_type(node: Any) -> bool:
    if isinstance(node, dict):
        return "logicalType" in node or any(_has_logical_type(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_logical_type(v) for v in node)
    return False


def read_lock(schemas_dir: Path) -> dict[str, dict[str, str]]:
    """The recorded fingerprints: `{record: {"v1": "0x...", ...}}` (empty if no lock file)."""
    path = schemas_dir / FINGERPRINT_LOCK
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SchemaLayoutError(path, "must be a JSON object {record: {vN: fingerprint}}")
    return data


def _load_all(schemas_dir: Path, problems: list[str]) -> dict[str, list[SchemaVersion]]:
    loaded: dict[str, list[SchemaVersion]] = {}
    for name, n, path in iter_schema_files(schemas_dir):
        label = f"{name} v{n} ({path.name})"
        try:
            reference = parse_reference(path.read_text(encoding="utf-8"))
        except Exception as exc:  # the reference parser raises several types
            problems.append(f"{label}: the reference avro library rejects it: {exc}")
            continue
        try:
            sv = load_version(path, name, n)
        except SchemaLayoutError as exc:
            problems.append(f"{label}: {exc.problem}")
            continue
        if _has_logical_type(sv.schema):
            problems.append(
                f"{label}: uses a logicalType; instants are plain long epoch millis "
                "(implementations disagree on the fingerprint of logical types, decision 0020)"
            )
        ref_fp = int.from_bytes(reference.fingerprint("CRC-64-AVRO"), "little")
        if ref_fp != sv.fingerprint:
            problems.append(
                f"{label}: fastavro fingerprint {format_fingerprint(sv.fingerprint)} differs "
                f"from the reference library's {format_fingerprint(ref_fp)}"
            )
        loaded.setdefault(name, []).append(sv)
    for kept in loaded.values():
        kept.sort(key=lambda v: v.version)
    return loaded


def check_schemas(schemas_dir: Path | str | None = None) -> list[str]:
    """Check the schemas folder; return one line per problem (empty means all good).

    For each record: every version parses with the reference library and fastavro and
    both give the same fingerprint; no logical types; the current (highest) version reads
    every kept earlier version; and every version matches its entry in
    `fingerprints.json`, where no entry may lack its file (kept versions are never deleted).
    """
    root = Path(schemas_dir) if schemas_dir else find_schemas_dir()
    problems: list[str] = []
    try:
        loaded = _load_all(root, problems)
        lock = read_lock(root)
    except SchemaLayoutError as exc:
        return [*problems, str(exc)]

    for name, kept in loaded.items():
        current = kept[-1]
        for older in kept:
            for why in incompatibilities(current.schema, older.schema):
                problems.append(
                    f"{name}: v{current.version} cannot read records written with "
                    f"v{older.version}: {why}"
                )

    for name, kept in loaded.items():
        recorded = lock.get(name, {})
        for v in kept:
            want = recorded.get(f"v{v.version}")
            got = format_fingerprint(v.fingerprint)
            if want is None:
                problems.append(
                    f"{name} v{v.version}: not in {FINGERPRINT_LOCK}; add "
                    f'"v{v.version}": "{got}" (python -m tickwheel.adapters.avro lock)'
                )
            elif want != got:
                problems.append(
                    f"{name} v{v.version}: fingerprint {got} differs from {want} recorded in "
                    f"{FINGERPRINT_LOCK}: a released version was edited; restore it and add "
                    f"v{kept[-1].version + 1} instead"
                )
    for name, recorded in lock.items():
        have = {f"v{v.version}" for v in loaded.get(name, [])}
        for tag in sorted(set(recorded) - have):
            problems.append(
                f"{name} {tag}: recorded in {FINGERPRINT_LOCK} but its file is gone; "
                "kept versions are never deleted"
            )
    return problems


def update_lock(schemas_dir: Path | str | None = None) -> list[str]:
    """Record the fingerprint of every version not yet in `fingerprints.json`.

    Never changes an existing entry (that is what `check_schemas` guards). Returns the
    entries added, as `"Record vN 0x..."` lines.
    """
    root = Path(schemas_dir) if schemas_dir else find_schemas_dir()
    lock = read_lock(root)
    added: list[str] = []
    for name, n, path in iter_schema_files(root):
        tag = f"v{n}"
        if tag in lock.get(name, {}):
            continue
        fp = format_fingerprint(load_version(path, name, n).fingerprint)
        lock.setdefault(name, {})[tag] = fp
        added.append(f"{name} {tag} {fp}")
    if added:
        ordered = {
            name: dict(sorted(tags.items(), key=lambda kv: int(kv[0][1:])))
            for name, tags in sorted(lock.items())
        }
        (root / FINGERPRINT_LOCK).write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")
    return added
