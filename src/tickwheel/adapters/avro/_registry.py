"""The schema registry that needs no server: `.avsc` files on disk, Avro single-object encoding.

Every record tickwheel puts on Kafka is written as Avro single-object encoding::

    C3 01 | 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's
          | Parsing Canonical Form | Avro binary body

so any Avro implementation can tell which schema wrote a record by fingerprinting the
`.avsc` files in `schemas/` (docs/decisions/0020). Records are always decoded into the
*current* (highest) version of their record, resolving from whichever kept version wrote
them. Instants are plain Avro `long` epoch milliseconds and decode to `int`.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
from fastavro.read import SchemaResolutionError
from fastavro.schema import to_parsing_canonical_form

from tickwheel.errors import TickwheelError

SINGLE_OBJECT_MARKER = b"\xc3\x01"
HEADER_SIZE = 10
NAMESPACE = "io.tickwheel"
SCHEMAS_DIR_ENV = "TICKWHEEL_SCHEMAS_DIR"

_VERSION_FILE = re.compile(r"^v([1-9][0-9]*)\.avsc$")

# CRC-64-AVRO (the Rabin fingerprint of the Avro specification).
_EMPTY64 = 0xC15D213AA4D7A795


def _crc64_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY64 & -(fp & 1))
        table.append(fp)
    return tuple(table)


_CRC64_TABLE = _crc64_table()


def crc64_avro(data: bytes) -> int:
    """Return the CRC-64-AVRO fingerprint of `data` as an unsigned 64-bit integer.

    The single-object header carries it little-endian; Java's
    `SchemaNormalization.parsingFingerprint64` returns the same value as a signed long.
    """
    fp = _EMPTY64
    for byte in data:
        fp = (fp >> 8) ^ _CRC64_TABLE[(fp ^ byte) & 0xFF]
    return fp


def format_fingerprint(fingerprint: int) -> str:
    """Render a fingerprint the way errors, logs and `schemas/fingerprints.json` show it."""
    return f"0x{fingerprint:016x}"


class UnknownRecord(TickwheelError, LookupError):
    """A record name (or version) that no `.avsc` file in the schemas folder defines."""

    def __init__(self, record_name: str, known: Iterable[str], version: int | None = None) -> None:
        what = record_name if version is None else f"{record_name} v{version}"
        self.record_name = record_name
        self.version = version
        self.known = tuple(sorted(known))
        super().__init__(f"unknown Avro record {what!r}; known: {', '.join(self.known)}")


class UnencodableRecord(TickwheelError, ValueError):
    """A value does not fit its record's schema (missing field, unknown field, wrong type)."""

    def __init__(self, record_name: str, reason: str) -> None:
        self.record_name = record_name
        self.reason = reason
        super().__init__(f"cannot encode {record_name}: {reason}")


class UndecodableRecord(TickwheelError, ValueError):
    """Bytes that are not a record this process can decode.

    `reason` is one of: ``"not single-object encoded"``, ``"unknown schema fingerprint
    0x..."``, ``"truncated/corrupt body: ..."``, ``"expected X got Y"``, or (only when
    the kept versions were never checked) ``"schema resolution failed: ..."``. `fingerprint` and
    `record_name` are filled in as far as the header could be read. The caller adds where
    the bytes came from (topic/partition/offset) and dead-letters them.
    """

    def __init__(
        self, reason: str, *, fingerprint: int | None = None, record_name: str | None = None
    ) -> None:
        self.reason = reason
        self.fingerprint = fingerprint
        self.record_name = record_name
        super().__init__(f"undecodable Avro record: {reason}")


class SchemaLayoutError(TickwheelError, ValueError):
    """The schemas folder breaks its layout rules (see `schemas/README.md`)."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True, eq=False)
class SchemaVersion:
    """One kept version of one record, pre-parsed for fastavro."""

    record_name: str
    version: int
    path: Path
    schema: Mapping[str, Any] = field(repr=False)
    """The schema as written in the `.avsc` file (not modified)."""
    canonical_form: str = field(repr=False)
    fingerprint: int = 0
    parsed: Any = field(default=None, repr=False, compare=False)

    @property
    def header(self) -> bytes:
        """The 10-byte single-object header for records written with this version."""
        return SINGLE_OBJECT_MARKER + self.fingerprint.to_bytes(8, "little")

    @property
    def full_name(self) -> str:
        """The Avro full name, e.g. ``io.tickwheel.JobDefinition``."""
        return f"{NAMESPACE}.{self.record_name}"


def load_version(path: Path, record_name: str, version: int) -> SchemaVersion:
    """Parse one `.avsc` file and check it declares `io.tickwheel.<record_name>`."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SchemaLayoutError(path, f"not readable JSON: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("type") != "record":
        raise SchemaLayoutError(path, "must hold one Avro record schema")
    if raw.get("name") != record_name or raw.get("namespace") != NAMESPACE:
        raise SchemaLayoutError(
            path,
            f"declares {raw.get('namespace')}.{raw.get('name')}, "
            f"expected {NAMESPACE}.{record_name} (the folder name)",
        )
    try:
        # A fresh named-types dict per version: v1 and v2 both define the same names.
        parsed = fastavro.parse_schema(raw, named_schemas={})
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise SchemaLayoutError(path, f"not a valid Avro schema: {exc}") from exc
    canonical = to_parsing_canonical_form(parsed)
    return SchemaVersion(
        record_name=record_name,
        version=version,
        path=path,
        schema=raw,
        canonical_form=canonical,
        fingerprint=crc64_avro(canonical.encode("utf-8")),
        parsed=parsed,
    )


def iter_schema_files(schemas_dir: Path) -> Iterator[tuple[str, int, Path]]:
    """Yield `(record_name, version, path)` for every `<Record>/v<N>.avsc` under the folder."""
    if not schemas_dir.is_dir():
        raise SchemaLayoutError(schemas_dir, "schemas folder does not exist")
    for record_dir in sorted(p for p in schemas_dir.iterdir() if p.is_dir()):
        files = sorted(record_dir.glob("*.avsc"))
        if not files:
            raise SchemaLayoutError(record_dir, "record folder holds no v<N>.avsc file")
        for path in files:
            match = _VERSION_FILE.match(path.name)
            if match is None:
                raise SchemaLayoutError(
                    path, "schema files must be named v<N>.avsc (N = 1, 2, ...)"
                )
            yield record_dir.name, int(match.group(1)), path


@dataclass(frozen=True)
class _Reader:
    """How to decode bytes carrying one fingerprint."""

    record_name: str
    writer: Any
    reader: Any  # None when the writer is the current version: no resolution needed


class SchemaRegistry:
    """Every kept version of every record, by name and by fingerprint.

    Encodes with the current (highest) version unless told otherwise; decodes any kept
    version into the current one. Immutable after construction, so it can be shared
    between threads.
    """

    def __init__(self, versions: Iterable[SchemaVersion], source: Path | None = None) -> None:
        by_name: dict[str, dict[int, SchemaVersion]] = {}
        for v in versions:
            if v.version in by_name.setdefault(v.record_name, {}):
                raise SchemaLayoutError(v.path, f"duplicate {v.record_name} v{v.version}")
            by_name[v.record_name][v.version] = v
        if not by_name:
            raise SchemaLayoutError(source or Path("."), "no schemas found")
        self.source = source
        self._versions = {
            name: tuple(vs[k] for k in sorted(vs)) for name, vs in sorted(by_name.items())
        }
        self._readers: dict[bytes, _Reader] = {}
        # Ascending order: when two versions share a canonical form (a doc- or default-only
        # change) the highest wins; either decodes the body identically.
        for name, kept in self._versions.items():
            current = kept[-1]
            for v in kept:
                reader = None if v.fingerprint == current.fingerprint else current.parsed
                self._readers[v.header[2:]] = _Reader(name, v.parsed, reader)
        owners: dict[bytes, str] = {}
        for name, kept in self._versions.items():
            for v in kept:
                other = owners.setdefault(v.header[2:], name)
                if other != name:
                    raise SchemaLayoutError(v.path, f"fingerprint collides with record {other}")

    @classmethod
    def from_dir(cls, schemas_dir: Path) -> SchemaRegistry:
        """Load every `<Record>/v<N>.avsc` in `schemas_dir`."""
        return cls(
            (load_version(path, name, n) for name, n, path in iter_schema_files(schemas_dir)),
            source=schemas_dir,
        )

    def record_names(self) -> tuple[str, ...]:
        """The record names, sorted."""
        return tuple(self._versions)

    def versions(self, record_name: str) -> tuple[SchemaVersion, ...]:
        """Every kept version of a record, oldest first."""
        try:
            return self._versions[record_name]
        except KeyError:
            raise UnknownRecord(record_name, self._versions) from None

    def current(self, record_name: str) -> SchemaVersion:
        """The highest kept version of a record: what `encode` writes and `decode` returns."""
        return self.versions(record_name)[-1]

    def version(self, record_name: str, version: int) -> SchemaVersion:
        """One kept version of a record."""
        for v in self.versions(record_name):
            if v.version == version:
                return v
        raise UnknownRecord(record_name, self._versions, version)

    def by_fingerprint(self, fingerprint: int) -> SchemaVersion | None:
        """The kept version with this fingerprint, or None."""
        reader = self._readers.get(fingerprint.to_bytes(8, "little"))
        if reader is None:
            return None
        return next(
            v for v in reversed(self._versions[reader.record_name]) if v.fingerprint == fingerprint
        )

    def encode(
        self, record_name: str, value: Mapping[str, Any], *, version: int | None = None
    ) -> bytes:
        """Encode `value` as single-object Avro with the current version (or `version`).

        Fields with a schema default may be left out; a field the schema does not know, a
        missing field without default, or a value of the wrong type raises
        `UnencodableRecord`. Instants are `int` epoch milliseconds.
        """
        sv = self.current(record_name) if version is None else self.version(record_name, version)
        buf = io.BytesIO()
        buf.write(sv.header)
        try:
            # strict_allow_default: a misspelt field name is an error, not silently dropped.
            fastavro.schemaless_writer(buf, sv.parsed, value, strict_allow_default=True)
        except (ValueError, TypeError, OverflowError, AttributeError, KeyError) as exc:
            raise UnencodableRecord(record_name, str(exc) or type(exc).__name__) from exc
        return buf.getvalue()

    def decode(self, data: bytes, expected: str | None = None) -> tuple[str, dict[str, Any]]:
        """Decode single-object Avro into `(record_name, value)` in the current version.

        With `expected`, a record of another kind is refused. Anything that is not a
        complete record of a known kept version raises `UndecodableRecord`.
        """
        if len(data) < HEADER_SIZE or data[:2] != SINGLE_OBJECT_MARKER:
            raise UndecodableRecord("not single-object encoded")
        key = bytes(data[2:HEADER_SIZE])
        entry = self._readers.get(key)
        if entry is None:
            fp = int.from_bytes(key, "little")
            raise UndecodableRecord(
                f"unknown schema fingerprint {format_fingerprint(fp)}", fingerprint=fp
            )
        if expected is not None and expected != entry.record_name:
            raise UndecodableRecord(
                f"expected {expected} got {entry.record_name}",
                fingerprint=int.from_bytes(key, "little"),
                record_name=entry.record_name,
            )
        buf = io.BytesIO(data)
        buf.seek(HEADER_SIZE)
        try:
            value = fastavro.schemaless_reader(buf, entry.writer, entry.reader)
        except SchemaResolutionError as exc:
            # Only reachable if check_schemas was skipped: the kept versions are incompatible.
            raise UndecodableRecord(
                f"schema resolution failed: {exc}",
                fingerprint=int.from_bytes(key, "little"),
                record_name=entry.record_name,
            ) from exc
        except Exception as exc:  # corrupt bytes surface as many unrelated exception types
            raise UndecodableRecord(
                f"truncated/corrupt body: {type(exc).__name__}: {exc}",
                fingerprint=int.from_bytes(key, "little"),
                record_name=entry.record_name,
            ) from exc
        trailing = len(data) - buf.tell()
        if trailing:
            raise UndecodableRecord(
                f"truncated/corrupt body: {trailing} trailing bytes after the record",
                fingerprint=int.from_bytes(key, "little"),
                record_name=entry.record_name,
            )
        if not isinstance(value, dict):  # pragma: no cover - every kept schema is a record
            raise UndecodableRecord("truncated/corrupt body: not a record")
        return entry.record_name, value


def read_fingerprint(data: bytes) -> int | None:
    """The writer-schema fingerprint in a single-object header, or None if there is none."""
    if len(data) < HEADER_SIZE or data[:2] != SINGLE_OBJECT_MARKER:
        return None
    return int.from_bytes(data[2:HEADER_SIZE], "little")


def find_schemas_dir() -> Path:
    """Locate the `schemas/` folder.

    In order: `$TICKWHEEL_SCHEMAS_DIR`; the repository root above this source file (an
    editable install or a checkout, recognised by its `pyproject.toml`); a copy shipped
    inside the package as `tickwheel/_schemas`.
    """
    override = os.environ.get(SCHEMAS_DIR_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise SchemaLayoutError(path, f"{SCHEMAS_DIR_ENV} does not name a folder")
        return path
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "schemas").is_dir():
            return parent / "schemas"
    packaged = here.parents[2] / "_schemas"
    if packaged.is_dir():
        return packaged
    raise SchemaLayoutError(
        Path("schemas"),
        f"cannot find the schemas folder; set {SCHEMAS_DIR_ENV} to the repository's schemas/",
    )


def load_schemas(schemas_dir: Path | str | None = None) -> SchemaRegistry:
    """Load a fresh `SchemaRegistry` from `schemas_dir` (default: `find_schemas_dir()`)."""
    return SchemaRegistry.from_dir(Path(schemas_dir) if schemas_dir else find_schemas_dir())


@functools.cache
def default_registry() -> SchemaRegistry:
    """The process-wide registry, loaded once from `find_schemas_dir()`."""
    return load_schemas()


def encode(record_name: str, value: Mapping[str, Any], *, version: int | None = None) -> bytes:
    """`default_registry().encode(...)`."""
    return default_registry().encode(record_name, value, version=version)


def decode(data: bytes, expected: str | None = None) -> tuple[str, dict[str, Any]]:
    """`default_registry().decode(...)`."""
    return default_registry().decode(data, expected)
