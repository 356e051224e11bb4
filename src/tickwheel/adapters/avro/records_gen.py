"""Generate `tickwheel.records` — one TypedDict per Avro record — from `schemas/*/vN.avsc`.

    python -m tickwheel.adapters.avro.records_gen          # rewrite src/tickwheel/records.py
    python -m tickwheel.adapters.avro.records_gen --check  # exit 1 when the file has drifted

Each type follows the highest version of its record, because that is the shape `decode`
returns (it reads every kept version into the current one, filling defaults), so every field
is a required key. TypedDicts rather than dataclasses: the codec already speaks dicts, and a
TypedDict gives mypy the field names and types at no cost on the hot path (decision 0080).
`tests/unit/test_records_drift.py` fails when a schema and its type disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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

HEADER = '''"""The Avro records as Python types — GENERATED, do not edit.

Regenerate with `python -m tickwheel.adapters.avro.records_gen` after adding a schema version;
`tests/unit/test_records_drift.py` fails while this file and `schemas/` disagree. One TypedDict
per record (its highest version: the shape `decode` returns), enums as `Literal`s. Pure types:
the core may import them (decision 0080).
"""

from __future__ import annotations

from typing import Literal, TypedDict

'''


class _Module:
    """The types of one generation run, nested records and enums first (each named once)."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.named: dict[str, str] = {}
        self.symbols: dict[str, list[str]] = {}

    def type_of(self, avro: Any) -> str:
        if isinstance(avro, str):
            if avro in PRIMITIVES:
                return PRIMITIVES[avro]
            short = avro.rsplit(".", 1)[-1]
            if short in self.named:
                return self.named[short]
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
            if name not in self.named:  # an enum named in two records is one type
                self.blocks.append(_literal(name, symbols))
                self.named[name] = name
                self.symbols[name] = symbols
            return name
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
        fields = [(f["name"], self.type_of(f["type"]), f.get("doc")) for f in schema["fields"]]
        doc = (schema.get("doc") or name).replace('"""', "'''")
        lines = [f"class {name}(TypedDict):", f'    """{_wrap(doc, 4)}"""', ""]
        for field, annotation, field_doc in fields:
            if field_doc:
                lines.append(f"    # {_wrap(field_doc, 4, prefix='# ')}")
            lines.append(f"    {field}: {annotation}")
        self.blocks.append("\n".join(lines) + "\n")
        self.named[name] = name
        return name


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


def latest_schemas(schemas_dir: Path) -> list[dict[str, Any]]:
    """The highest `vN.avsc` of every record folder, by record name."""
    found = []
    for folder in sorted(p for p in schemas_dir.iterdir() if p.is_dir()):
        versions = sorted(folder.glob("v*.avsc"), key=lambda p: int(p.stem[1:]))
        if versions:
            found.append(json.loads(versions[-1].read_text()))
    return found


def generate(schemas_dir: Path | None = None) -> str:
    """The text of `tickwheel/records.py` for the schemas in `schemas_dir`."""
    module = _Module()
    schemas = latest_schemas(schemas_dir or find_schemas_dir())
    for schema in schemas:
        module.record(schema)
    names = sorted(module.named)
    exports = "\n".join(f'    "{n}",' for n in names)
    return HEADER + "\n\n".join(module.blocks) + f"\n\n__all__ = [\n{exports}\n]\n"


def target_path() -> Path:
    return Path(__file__).resolve().parents[2] / "records.py"


def main(argv: list[str]) -> int:
    text = generate()
    path = target_path()
    if "--check" in argv:
        if not path.is_file() or path.read_text() != text:
            print(f"{path} is out of date: run python -m tickwheel.adapters.avro.records_gen")
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
