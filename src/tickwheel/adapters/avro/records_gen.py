"""Generate the `tickwheel.records` package — one TypedDict per Avro record, one module per
record family — from `schemas/*/vN.avsc`.

    python -m tickwheel.adapters.avro.records_gen          # rewrite src/tickwheel/records/
    python -m tickwheel.adapters.avro.records_gen --check  # exit 1 when a file has drifted

It also writes the hot records' codecs, `tickwheel.adapters.avro.fast` (`codecs_gen`): one
generator, one check, so a new field touches its schema and nothing else by hand (0214).

Each type follows the highest version of its record, because that is the shape `decode`
returns (it reads every kept version into the current one, filling defaults), so every field
is a required key. TypedDicts rather than dataclasses: the codec already speaks dicts, and a
TypedDict gives mypy the field names and types at no cost on the hot path (decision 0080).
A record's family is the topic group it travels on (`FAMILIES`, decision 0156); a named type
used by two families (`Priority`) is written once, in `shared.py`. The package's `__init__`
re-exports every name. `tests/unit/records/test_records_drift.py` fails when a schema and its
type disagree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tickwheel.adapters.avro import codecs_gen
from tickwheel.adapters.avro._registry import find_schemas_dir

PRIMITIVES = {
    "null": "None",
    "boolean": "bool",
    "int": "int",
    "long": "int",
    "float": "float",
    "double": "float",
    "bytes": "bytes",
    "string": "str",
}

# family module -> (what its records are, the records in it). A new record must be placed
# here before the generator writes it: the family is a choice, not a guess (decision 0156).
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "jobs": (
        "job definitions and the single writer's commands, verdicts and checkpoint "
        "(jobs.*, jobwriter.state)",
        ("JobDefinition", "JobCommand", "JobVerdict", "JobWriterCheckpoint"),
    ),
    "calendars": ("named holiday calendars (calendars)", ("Calendar",)),
    "timer": (
        "the timer's per-job state and its commands (timers.*)",
        ("TimerState", "TimerCommand"),
    ),
    "executions": (
        "an execution's requests, events and control instructions (executions.*)",
        ("ExecutionRequest", "ExecutionEvent", "ExecutionControl"),
    ),
    "dead_letters": (
        "dead letters and what an operator did about them (executions.dlq*)",
        ("DeadLetter", "DeadLetterResolution"),
    ),
    "workflows": (
        "workflow definitions, inputs, events and snapshots (workflows.*)",
        ("WorkflowDefinition", "WorkflowInput", "WorkflowEvent", "WorkflowSnapshot"),
    ),
    "alerts": ("the watchdog's alerts (alerts, watchdog.*)", ("Alert",)),
    "topology": (
        "changes to the partition count of a co-partition group (topology.changes)",
        ("TopologyChange",),
    ),
    "api": (
        "the HTTP API's keys, idempotency records and audit events (api.*)",
        ("ApiKey", "IdempotencyRecord", "ApiAuditEvent"),
    ),
}
SHARED = "shared"
PACKAGE = "tickwheel.records"


class _Package:
    """The types of one generation run, by module; nested types before their record."""

    def __init__(self, shared_names: set[str]) -> None:
        self.shared_names = shared_names
        self.blocks: dict[str, list[str]] = {}
        self.home: dict[str, str] = {}  # named type -> the module that defines it
        self.symbols: dict[str, list[str]] = {}
        self.imports: dict[str, set[str]] = {}  # module -> names it takes from other modules
        self.typing: dict[str, set[str]] = {}  # module -> Literal / TypedDict
        self.module = SHARED

    def _use(self, name: str) -> str:
        if self.home[name] != self.module:
            self.imports.setdefault(self.module, set()).add(name)
        return name

    def _define(self, name: str, block: str, kind: str) -> None:
        self.blocks.setdefault(self.module, []).append(block)
        self.typing.setdefault(self.module, set()).add(kind)
        self.home[name] = self.module

    def type_of(self, avro: Any) -> str:
        if isinstance(avro, str):
            if avro in PRIMITIVES:
                return PRIMITIVES[avro]
            short = avro.rsplit(".", 1)[-1]
            if short in self.home:
                return self._use(short)
            raise ValueError(f"unknown Avro type {avro!r}")
        if isinstance(avro, list):
            members = [self.type_of(member) for member in avro]
            non_null = [m for m in members if m != "None"]
            return " | ".join(non_null + (["None"] if "None" in members else []))
        kind = avro["type"]
        if kind == "record":
            return self.record(avro)
        if kind == "enum":
            name: str = avro["name"]
            symbols = list(avro["symbols"])
            if name in self.symbols and self.symbols[name] != symbols:
                raise ValueError(f"enum {name} has different symbols in two records")
            if name not in self.home:  # an enum named in two records is one type
                with self._in(name):
                    self._define(name, _literal(name, symbols), "Literal")
                self.symbols[name] = symbols
            return self._use(name)
        if kind == "array":
            return f"list[{self.type_of(avro['items'])}]"
        if kind == "map":
            return f"dict[str, {self.type_of(avro['values'])}]"
        if kind == "fixed":
            return "bytes"
        if kind in PRIMITIVES:
            return PRIMITIVES[kind]
        raise ValueError(f"unsupported Avro type {kind!r}")

    def record(self, schema: dict[str, Any]) -> str:
        name: str = schema["name"]
        if name in self.home:
            return self._use(name)
        with self._in(name):
            fields = [(f["name"], self.type_of(f["type"]), f.get("doc")) for f in schema["fields"]]
            doc = (schema.get("doc") or name).replace('"""', "'''")
            lines = [f"class {name}(TypedDict):", f'    """{_wrap(doc, 4)}"""', ""]
            for field, annotation, field_doc in fields:
                if field_doc:
                    lines.append(f"    # {_wrap(field_doc, 4, prefix='# ')}")
                lines.append(f"    {field}: {annotation}")
            self._define(name, "\n".join(lines) + "\n", "TypedDict")
        return self._use(name)

    def _in(self, name: str) -> _ModuleScope:
        return _ModuleScope(self, SHARED if name in self.shared_names else self.module)


class _ModuleScope:
    """Generate into `module` for the duration of a `with` block (a shared nested type)."""

    def __init__(self, package: _Package, module: str) -> None:
        self.package, self.module, self.outer = package, module, package.module

    def __enter__(self) -> None:
        self.package.module = self.module

    def __exit__(self, *_: object) -> None:
        self.package.module = self.outer


def _literal(name: str, symbols: list[str]) -> str:
    """`Name = Literal[...]`, laid out as ruff format lays it out (one line when it fits)."""
    quoted = [json.dumps(symbol) for symbol in symbols]
    line = f"{name} = Literal[{', '.join(quoted)}]"
    if len(line) <= 100:
        return line + "\n"
    return f"{name} = Literal[\n" + "".join(f"    {q},\n" for q in quoted) + "]\n"


def _wrap(text: str, indent: int, prefix: str = "", width: int = 96) -> str:
    """`text` wrapped to the line length, continuation lines indented (and prefixed)."""
    words, lines, line = " ".join(text.split()).split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width - indent - len(prefix):
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return ("\n" + " " * indent + prefix).join(lines)


def _from_import(module: str, names: list[str]) -> str:
    """`from module import a, b` as ruff's isort lays it out (wrapped past 100 columns)."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= 100:
        return line + "\n"
    return f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")\n"


def _exports(names: list[str]) -> str:
    return "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]\n"


def latest_schemas(schemas_dir: Path) -> list[dict[str, Any]]:
    """The highest `vN.avsc` of every record folder, by record name."""
    found = []
    for folder in sorted(p for p in schemas_dir.iterdir() if p.is_dir()):
        versions = sorted(folder.glob("v*.avsc"), key=lambda p: int(p.stem[1:]))
        if versions:
            found.append(json.loads(versions[-1].read_text()))
    return found


def family_of(record_name: str) -> str:
    """The family module a top-level record is written to; refuses a record not placed yet."""
    for family, (_, members) in FAMILIES.items():
        if record_name in members:
            return family
    raise ValueError(
        f"record {record_name} has no family: add it to FAMILIES in "
        "tickwheel/adapters/avro/records_gen.py (decision 0156)"
    )


def _named_types(avro: Any) -> Iterator[str]:
    """Every record and enum name defined inside `avro` (itself included)."""
    if isinstance(avro, list):
        for member in avro:
            yield from _named_types(member)
    elif isinstance(avro, dict):
        kind = avro["type"]
        if kind in ("record", "enum"):
            yield avro["name"]
            for field in avro.get("fields", ()):
                yield from _named_types(field["type"])
        elif kind == "array":
            yield from _named_types(avro["items"])
        elif kind == "map":
            yield from _named_types(avro["values"])


def _shared_names(schemas: list[dict[str, Any]]) -> set[str]:
    """Named types that appear in records of more than one family."""
    families: dict[str, set[str]] = {}
    for schema in schemas:
        for name in _named_types(schema):
            families.setdefault(name, set()).add(family_of(schema["name"]))
    return {name for name, seen in families.items() if len(seen) > 1}


def _module_text(package: _Package, module: str, description: str) -> str:
    typing_names = sorted(package.typing.get(module, ()))
    summary = _wrap(f"{description[0].upper()}{description[1:]}, as Python types.", 0, width=97)
    parts = [
        f'"""{summary}\n\n'
        "GENERATED by `python -m tickwheel.adapters.avro.records_gen` from `schemas/`, do not edit.\n"
        "One TypedDict per record (its highest version: the shape `decode` returns), enums as\n"
        "`Literal`s. Pure types: the core may import them (decisions 0080, 0156).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n",
        _from_import("typing", typing_names),
    ]
    imported = package.imports.get(module, set())
    by_home: dict[str, list[str]] = {}
    for name in sorted(imported):
        by_home.setdefault(package.home[name], []).append(name)
    if by_home:
        parts.append("\n")
        for home in sorted(by_home):
            parts.append(_from_import(f"{PACKAGE}.{home}", by_home[home]))
    defined = sorted(name for name, home in package.home.items() if home == module)
    blocks = package.blocks[module]
    # ruff format: one blank line after the imports before an assignment, two before a class
    parts.append("\n\n" if blocks[0].startswith("class ") else "\n")
    parts.append("\n\n".join(blocks))
    parts.append("\n\n" + _exports(defined))
    return "".join(parts)


def _init_text(package: _Package) -> str:
    parts = [
        '"""The Avro records as Python types, one module per record family.\n\n'
        "GENERATED by `python -m tickwheel.adapters.avro.records_gen` from `schemas/`, do not edit:\n"
        "rerun it after adding a schema version (`tests/unit/records/test_records_drift.py` fails\n"
        "while these files and `schemas/` disagree). Import from here\n"
        "(`from tickwheel.records import JobDefinition`); the family modules are the layout\n"
        "(decision 0156).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n",
    ]
    for module in sorted(package.blocks):
        names = sorted(name for name, home in package.home.items() if home == module)
        parts.append(_from_import(f"{PACKAGE}.{module}", names))
    parts.append("\n" + _exports(sorted(package.home)))
    return "".join(parts)


def generate(schemas_dir: Path | None = None) -> dict[str, str]:
    """The text of every file of the `tickwheel.records` package, by file name."""
    schemas = latest_schemas(schemas_dir or find_schemas_dir())
    package = _Package(_shared_names(schemas))
    for schema in schemas:
        package.module = family_of(schema["name"])
        package.record(schema)
    descriptions = {family: description for family, (description, _) in FAMILIES.items()}
    descriptions[SHARED] = "named types that records of more than one family use"
    files = {
        f"{module}.py": _module_text(package, module, descriptions[module])
        for module in sorted(package.blocks)
    }
    files["__init__.py"] = _init_text(package)
    return files


def target_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "records"


def drifted(
    package_dir: Path,
    schemas_dir: Path | None = None,
    make: Callable[[Path | None], dict[str, str]] = generate,
) -> list[str]:
    """The files of `package_dir` that differ from what `make` (the generator) writes for
    `schemas_dir`: changed, missing, or a module the generator no longer writes."""
    expected = make(schemas_dir)
    present = {p.name for p in package_dir.glob("*.py")} if package_dir.is_dir() else set()
    wrong = [
        name
        for name, text in expected.items()
        if name not in present or (package_dir / name).read_text() != text
    ]
    return sorted(wrong + [name for name in present if name not in expected])


def write(
    package_dir: Path,
    schemas_dir: Path | None = None,
    make: Callable[[Path | None], dict[str, str]] = generate,
) -> list[str]:
    """Rewrite the package from the schemas, removing modules the generator no longer writes."""
    expected = make(schemas_dir)
    package_dir.mkdir(parents=True, exist_ok=True)
    for stale in package_dir.glob("*.py"):
        if stale.name not in expected:
            stale.unlink()
    for name, text in expected.items():
        (package_dir / name).write_text(text)
    return sorted(expected)


def main(argv: list[str]) -> int:
    """Write (or with `--check`, compare) both generated packages: the records' types and the
    hot records' codecs (`codecs_gen`, decision 0214)."""
    packages = ((target_dir(), generate), (codecs_gen.target_dir(), codecs_gen.generate))
    if "--check" in argv:
        status = 0
        for path, make in packages:
            wrong = drifted(path, make=make)
            if wrong:
                print(
                    f"{path} is out of date ({', '.join(wrong)}): "
                    "run python -m tickwheel.adapters.avro.records_gen"
                )
                status = 1
        return status
    for path, make in packages:
        write(path, make=make)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
