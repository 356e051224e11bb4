"""Generate `tickwheel.adapters.avro.fast` — Avro binary written and read directly, without
fastavro's schema walk — for the hot records, from `schemas/*/vN.avsc`.

Run by `records_gen` (one generator, one `--check`). A hot record is listed in `FAST` with what
its codec does (write, read) and what its values are like, so the generated code takes the
shortcuts the hand-written codecs took (decisions 0114, 0116, 0117, 0131, 0144, 0214):

- `unique`: fields whose values rarely repeat (ids, free text). Every other run of two or more
  adjacent scalar fields is written once per distinct value tuple (a bounded memo): a burst's
  requests share their slot, type, tenant and lease terms; an input's events their instant.
- `tail_memo`: the record starts with its unique fields and the rest repeats: a read looks the
  rest's bytes up and copies the values it read the first time.
- `instants`: long fields holding epoch milliseconds: read through a lookup of their high bytes.
- `null_tail`: the last n fields are optional and usually null: read as one comparison.
- `given`: fields passed to `write` as arguments rather than read from the value (the timer's
  transaction number on its states).
- `embedded`: bytes fields that carry another record's encoding: `write` takes a mapping there
  and asks its `embed` argument for its bytes (the timer's pending requests).

A record's generated module checks, on first use, that the registry's current version is the
one it was generated from (its header) and otherwise hands every record to the generic codec.
The bytes and values are fastavro's: `tests/unit/adapters/avro/test_fast_codecs.py` holds every
generated codec to it (hypothesis, values drawn from the schema).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwheel.adapters.avro._registry import load_schemas


@dataclass(frozen=True)
class Fast:
    """What one hot record's generated codec does, and what its values are like."""

    write: bool = False
    read: bool = False
    unique: tuple[str, ...] = ()
    tail_memo: bool = False
    instants: tuple[str, ...] = ()
    null_tail: int = 0
    given: tuple[str, ...] = ()
    embedded: tuple[str, ...] = ()


# The records written or read on a hot path, and their codecs' options (see the docstring).
FAST: dict[str, Fast] = {
    "ExecutionRequest": Fast(
        write=True, read=True, unique=("execution_id", "job_id"), tail_memo=True
    ),
    "JobDefinition": Fast(read=True, instants=("createdAt", "updatedAt"), null_tail=17),
    "ExecutionEvent": Fast(
        read=True,
        instants=("event_time", "scheduled_time", "fire_time", "lease_deadline"),
        null_tail=4,
    ),
    "TimerState": Fast(
        write=True,
        unique=("job_id", "timer_id", "execution_id"),
        given=("seq",),
        embedded=("request",),
    ),
    "WorkflowEvent": Fast(write=True, unique=("event_id", "data", "error", "seq")),
    "WorkflowSnapshot": Fast(write=True, unique=("state", "seq")),
    "TimerCommand": Fast(write=True, unique=("command_id", "data", "payload")),
}
PACKAGE = "tickwheel.adapters.avro.fast"
_READ_DOC = (
    '    """The record, read directly. Raises `Unusual` (or IndexError, UnicodeDecodeError)\n'
    '    for anything the generic decoder must judge."""'
)
_SCALARS = ("string", "long", "int", "boolean")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _kind(avro: Any) -> tuple[str, Any]:
    """(kind, detail) of a field type: a primitive, ("opt", type) for a union with null,
    ("enum", (name, symbols)), ("array", items), ("map", values), ("record", schema)."""
    if isinstance(avro, str):
        return avro, None
    if isinstance(avro, list):
        others = [t for t in avro if t != "null"]
        if len(avro) == 2 and len(others) == 1:
            return "opt", (avro.index("null"), others[0])
        raise ValueError(f"unsupported union {avro!r}")
    kind = avro["type"]
    if kind == "enum":
        return "enum", (avro["name"], tuple(avro["symbols"]))
    if kind == "array":
        return "array", avro["items"]
    if kind == "map":
        return "map", avro["values"]
    if kind == "record":
        return "record", avro
    return _kind(kind)


def _memoizable(avro: Any) -> bool:
    kind, detail = _kind(avro)
    if kind == "opt":
        return _memoizable(detail[1])
    return kind in _SCALARS or kind == "enum"


class _Module:
    """The text of one generated module, built up while its record's fields are visited."""

    def __init__(self, schema: Mapping[str, Any], fast: Fast, header: bytes) -> None:
        self.schema, self.fast, self.header = schema, fast, header
        self.name: str = schema["name"]
        self.tables: dict[str, str] = {}  # enum constant -> its definition lines
        self.writers: list[str] = []
        self.written: set[str] = set()  # records whose writer is in `writers`
        self.memos: list[str] = []
        self.item_readers: dict[str, str] = {}  # function name -> text (records in arrays)
        self.uses: set[str] = set()  # names taken from `binary`

    def _use(self, name: str) -> str:
        self.uses.add(name)
        return name

    def _enum(self, detail: tuple[str, tuple[str, ...]]) -> str:
        name, symbols = detail
        constant = snake(name).upper()
        self.tables.setdefault(
            constant,
            f"{constant} = {symbols!r}\n"
            f"_{constant} = {{symbol: {self._use('write_long')}(i) "
            f"for i, symbol in enumerate({constant})}}\n",
        )
        return constant

    # -- writing ------------------------------------------------------------------------------
    def write_expr(self, avro: Any, value: str, embedded: bool = False) -> str:
        """An expression writing `value` (an expression) as `avro`."""
        kind, detail = _kind(avro)
        if embedded:
            if kind not in ("bytes", "opt"):
                raise ValueError(f"{self.name}: an embedded field is bytes or optional bytes")
            writer = self._use("write_opt_embedded" if kind == "opt" else "write_embedded")
            return f"{writer}({value}, embed)"
        if kind == "string":
            return f"{self._use('write_string')}({value})"
        if kind in ("long", "int"):
            return f"{self._use('write_long')}({value})"
        if kind == "boolean":
            return f"{self._use('write_boolean')}({value})"
        if kind == "bytes":
            return f"{self._use('write_bytes')}({value})"
        if kind == "enum":
            return f"_{self._enum(detail)}[{value}]"
        if kind == "opt":
            null_index, inner = detail
            inner_kind = _kind(inner)[0]
            if null_index == 0 and inner_kind == "string":
                return f"{self._use('write_opt_string')}({value})"
            if null_index == 0 and inner_kind in ("long", "int"):
                return f"{self._use('write_opt_long')}({value})"
            null, some = ("NULL", "SOME") if null_index == 0 else ("SOME", "NULL")
            self._use(null), self._use(some)
            return f"({null} if {value} is None else {some} + {self.write_expr(inner, value)})"
        if kind == "array":
            item = self.write_expr(detail, "item")
            return f"{self._use('write_block')}([{item} for item in {value}])"
        if kind == "map":
            entry = self.write_expr(detail, "item")
            key = f"{self._use('write_string')}(key)"
            return f"{self._use('write_block')}([{key} + {entry} for key, item in {value}.items()])"
        if kind == "record":
            self.record_writer(detail, top=False)
            call = f"_write_{snake(detail['name'])}({value}"
            return call + (", embed)" if self.fast.embedded else ")")
        raise ValueError(f"{self.name}: cannot write {avro!r}")

    def record_writer(self, schema: Mapping[str, Any], top: bool) -> None:
        fields = [f for f in schema["fields"] if not (top and f["name"] in self.fast.given)]
        names = [f["name"] for f in fields]
        tag = snake(schema["name"]).upper()
        function = "write" if top else f"_write_{snake(schema['name'])}"
        if schema["name"] in self.written:
            return
        self.written.add(schema["name"])
        lines = [
            f"_{tag}_FIELDS = frozenset({tuple(f['name'] for f in schema['fields'])!r})",
            f"_{tag}_ALL = operator.itemgetter{tuple(names)!r}"
            if len(names) > 1
            else f"_{tag}_ALL = operator.itemgetter({names[0]!r})",
            "",
            "",
        ]
        args = "value: Mapping[str, Any]"
        if top:
            args += "".join(f", {g}: int" for g in self.fast.given)
        if self.fast.embedded:
            args += ", embed: Callable[[Mapping[str, Any]], bytes]"
        doc = (
            f'    """`value` as {self.name} bytes, directly. Raises what the generic encoder\n'
            '    would refuse, and anything this path does not take: the caller falls back."""'
            if top
            else f'    """The body of a {schema["name"]}."""'
        )
        lines += [f"def {function}({args}) -> bytes:", doc]
        # Every field read in one C call; a value with exactly those keys has no other (the
        # set comparison, a third of a request's cost, only for a value with fewer or more).
        lines.append("    try:")
        values = f"_{tag}_ALL(value)"
        lines.append(f"        v = {values}" + ("" if len(names) > 1 else ","))
        lines.append(
            f"        if len(value) != {len(names)} and not _{tag}_FIELDS.issuperset(value):"
        )
        lines.append("            raise KeyError")
        lines.append(
            "    except KeyError:  # a defaulted field left out (a missing required: refused)"
        )
        lines.append(f"        if not _{tag}_FIELDS.issuperset(value):")
        lines.append(
            f'            raise KeyError("a field {schema["name"]} does not have") from None'
        )
        getters = []
        for f in fields:
            if "default" in f:
                default = f["default"]
                default = () if default == [] else default
                getters.append(f"value.get({f['name']!r}, {default!r})")
            else:
                getters.append(f"value[{f['name']!r}]")
        lines.append(f"        v = ({', '.join(getters)},)")
        parts: list[str] = ["HEADER"] if top else []
        index = {name: i for i, name in enumerate(names)}
        run: list[Mapping[str, Any]] = []

        def close_run() -> None:
            if len(run) >= 2:
                first, last = index[run[0]["name"]], index[run[-1]["name"]]
                memo = f"_{tag}_RUN_{first}_{last}"
                self.memos.append(f"{memo}: dict[tuple[Any, ...], bytes] = {{}}")
                writes = ", ".join(
                    self.write_expr(f["type"], f"v[{index[f['name']]}]") for f in run
                )
                lines.append(f"    key = v[{first}:{last + 1}]")
                lines.append(f"    run_{first} = {memo}.get(key)")
                lines.append(f"    if run_{first} is None:")
                lines.append(f'        run_{first} = _remember({memo}, key, b"".join(({writes},)))')
                parts.append(f"run_{first}")
            else:
                parts.extend(self.write_expr(f["type"], f"v[{index[f['name']]}]") for f in run)
            run.clear()

        for f in schema["fields"]:
            name = f["name"]
            if top and name in self.fast.given:
                close_run()
                parts.append(f"{self._use('write_long')}({name})")
            elif (
                name in self.fast.unique or name in self.fast.embedded or not _memoizable(f["type"])
            ):
                close_run()
                parts.append(
                    self.write_expr(f["type"], f"v[{index[name]}]", name in self.fast.embedded)
                )
            else:
                run.append(f)
        close_run()
        lines.append(f'    return b"".join(({", ".join(parts)},))')
        self.writers.append("\n".join(lines) + "\n")

    # -- reading ------------------------------------------------------------------------------
    def read_lines(self, avro: Any, target: str, indent: str, instant: bool) -> list[str]:
        kind, detail = _kind(avro)
        if kind == "string":  # under 64 bytes: a one-byte length, read here without a call
            return [
                f"{indent}size = data[pos]",
                f"{indent}if size < 0x80:",
                f"{indent}    start = pos + 1",
                f"{indent}    pos = start + (size >> 1)",
                f"{indent}    if size & 1 or pos > len(data):",
                f"{indent}        raise {self._use('Unusual')}",
                f"{indent}    {target} = data[start:pos].decode()",
                f"{indent}else:",
                f"{indent}    {target}, pos = {self._use('read_string')}(data, pos)",
            ]
        if kind in ("long", "int"):
            reader = "read_instant" if instant else "read_long"
            return [f"{indent}{target}, pos = {self._use(reader)}(data, pos)"]
        if kind == "boolean":
            return [
                f"{indent}if data[pos] > 1:",
                f"{indent}    raise {self._use('Unusual')}",
                f"{indent}{target} = data[pos] == 1",
                f"{indent}pos += 1",
            ]
        if kind == "enum":
            constant = self._enum(detail)
            return [
                f"{indent}n, pos = {self._use('read_long')}(data, pos)",
                f"{indent}if not 0 <= n < {len(detail[1])}:",
                f"{indent}    raise {self._use('Unusual')}",
                f"{indent}{target} = {constant}[n]",
            ]
        if kind == "map" and _kind(detail)[0] == "string":  # usually empty: one byte
            return [
                f"{indent}if data[pos] == 0:",
                f"{indent}    {target}: dict[str, str] = {{}}",
                f"{indent}    pos += 1",
                f"{indent}else:",
                f"{indent}    {target}, pos = {self._use('read_string_map')}(data, pos)",
            ]
        if kind == "opt":
            null_index, inner = detail
            inner_kind = _kind(inner)[0]
            if null_index == 0 and inner_kind == "string":
                return [f"{indent}{target}, pos = {self._use('read_opt_string')}(data, pos)"]
            if null_index == 0 and inner_kind in ("long", "int"):
                reader = "read_opt_instant" if instant else "read_opt_long"
                return [f"{indent}{target}, pos = {self._use(reader)}(data, pos)"]
            if null_index == 0 and inner_kind in ("array", "map", "record"):
                return [
                    f"{indent}if data[pos] == 0:",
                    f"{indent}    {target} = None",
                    f"{indent}    pos += 1",
                    f"{indent}elif data[pos] != 2:",
                    f"{indent}    raise {self._use('Unusual')}",
                    f"{indent}else:",
                    f"{indent}    pos += 1",
                    *self.read_lines(inner, target, indent + "    ", False),
                ]
        if kind == "array":
            reader = self.item_reader(detail)
            return [f"{indent}{target}, pos = {self._use('read_array')}(data, pos, {reader})"]
        if kind == "record":
            return [f"{indent}{target}, pos = {self.item_reader(avro)}(data, pos)"]
        raise ValueError(f"{self.name}: cannot read {avro!r}")

    def item_reader(self, avro: Any) -> str:
        """The name of a function `(data, pos) -> (value, pos)` reading one `avro` value: a
        primitive's from `binary`, a record's generated into this module."""
        kind, _ = _kind(avro)
        if kind in ("string", "long", "int"):
            return self._use("read_string" if kind == "string" else "read_long")
        if kind != "record":
            raise ValueError(f"{self.name}: cannot read an array of {avro!r}")
        function = f"_read_{snake(avro['name'])}"
        if function not in self.item_readers:
            lines = [f"def {function}(data: bytes, pos: int) -> tuple[dict[str, object], int]:"]
            for f in avro["fields"]:
                lines += self.read_lines(f["type"], f["name"], "    ", False)
            values = ", ".join(f"{f['name']!r}: {f['name']}" for f in avro["fields"])
            lines.append(f"    return {{{values}}}, pos")
            self.item_readers[function] = "\n".join(lines) + "\n"
        return function

    def reader(self) -> str:
        fast, fields = self.fast, self.schema["fields"]
        names = [f["name"] for f in fields]
        prefix = 0
        while prefix < len(names) and names[prefix] in fast.unique:
            prefix += 1
        lines: list[str] = []
        body_fields = fields[prefix:] if fast.tail_memo else fields
        head = "_read_tail(data: bytes, pos: int) -> dict[str, object]" if fast.tail_memo else None
        if head:
            lines += [
                f"def {head}:",
                "    # The fields after the unique ones, read once per distinct bytes.",
            ]
        else:
            lines += [f"def read(data: bytes) -> {self.name}:", _READ_DOC, "    pos = _HEADER_SIZE"]
        tail = fast.null_tail
        plain = body_fields[: len(body_fields) - tail] if tail else body_fields
        for f in plain:
            lines += self.read_lines(f["type"], f["name"], "    ", f["name"] in fast.instants)
        if tail:
            quiet = body_fields[-tail:]
            for f in quiet:
                kind, detail = _kind(f["type"])
                if kind != "opt" or detail[0] != 0:
                    raise ValueError(
                        f"{self.name}: null_tail covers a field that is not null first"
                    )
            null_names = " = ".join(f["name"] for f in quiet)
            self.tables["_QUIET"] = (
                f'_QUIET = b"\\x00" * {tail}  # the last {tail} fields all null\n'
                f'_QUIET_BUT_LAST = b"\\x00" * {tail - 1}\n'
            )
            lines += [
                f"    {null_names} = None",
                "    if data[pos:] == _QUIET:  # the usual case, as one comparison",
                f"        pos += {tail}",
                "    else:",
                f"        if data[pos : pos + {tail - 1}] == _QUIET_BUT_LAST:",
                f"            pos += {tail - 1}",
                "        else:",
            ]
            for f in quiet[:-1]:
                lines += self.read_lines(f["type"], f["name"], "            ", False)
            lines += self.read_lines(quiet[-1]["type"], quiet[-1]["name"], "        ", False)
        lines += ["    if pos != len(data):", f"        raise {self._use('Unusual')}"]
        if fast.tail_memo:
            placeholders = ", ".join(f"{n!r}: None" for n in names[:prefix])
            values = ", ".join(f"{f['name']!r}: {f['name']}" for f in body_fields)
            lines.append(f"    return {{{placeholders}, {values}}}")
            lines += [
                "",
                "",
                f"def read(data: bytes) -> {self.name}:",
                _READ_DOC,
                "    pos = _HEADER_SIZE",
            ]
            for f in fields[:prefix]:
                lines += self.read_lines(f["type"], f["name"], "    ", False)
            lines += [
                "    key = data[pos:]",
                "    tail = _TAILS.get(key)",
                "    if tail is None:",
                "        tail = _remember(_TAILS, key, _read_tail(data, pos))",
                "    # A copy of the remembered values (in schema order, the ids placeholders).",
                "    record = tail.copy()",
            ]
            lines += [f"    record[{n!r}] = {n}" for n in names[:prefix]]
            lines.append(f"    return cast({self.name}, record)")
            self.memos.append("_TAILS: dict[bytes, dict[str, object]] = {}")
        else:
            values = ", ".join(f"{n!r}: {n}" for n in names)
            lines.append(f"    return cast({self.name}, {{{values}}})")
        return "\n".join(lines) + "\n"

    # -- the module ---------------------------------------------------------------------------
    def text(self) -> str:
        fast = self.fast
        if fast.write:
            self.record_writer(self.schema, top=True)
        read = self.reader() if fast.read else ""
        what = " and ".join(w for w, on in (("written", fast.write), ("read", fast.read)) if on)
        parts = [
            f'"""`{self.name}` {what} as Avro binary directly (the current version).\n\n'
            "GENERATED by `python -m tickwheel.adapters.avro.records_gen` from `schemas/`, do not "
            "edit;\nthe options are `FAST` in `tickwheel/adapters/avro/codecs_gen.py` "
            "(decision 0214).\n"
            '"""\n\n',
            "from __future__ import annotations\n\n",
        ]
        typing = {"Any"} if fast.write or fast.tail_memo else set()
        imports = []
        if fast.write:
            imports.append("import functools\nimport operator\n")
            collections = ["Mapping"] + (["Callable"] if fast.embedded else [])
            imports.append(f"from collections.abc import {', '.join(sorted(collections))}\n")
        else:
            imports.append("import functools\n")
        if fast.read:
            typing.add("cast")
        parts.append("".join(imports))
        parts.append(f"from typing import {', '.join(sorted(typing))}\n\n")
        parts.append("from tickwheel.adapters import avro\n")
        if fast.read:
            self.uses.add("Unusual")
        binary = sorted(self.uses, key=_isort_key)
        parts.append(f"from tickwheel.adapters.avro.binary import {', '.join(binary)}\n")
        if fast.read:
            parts.append(f"from tickwheel.records import {self.name}\n")
        parts.append("\n")
        parts.append(f"NAME = {self.name!r}\n")
        parts.append(
            f"HEADER = {self.header!r}  # the version these functions were generated for\n"
        )
        parts.append("_HEADER_SIZE = len(HEADER)\n" if fast.read else "")
        parts.append(f"FIELD_NAMES = {tuple(f['name'] for f in self.schema['fields'])!r}\n")
        parts.extend(self.tables[k] for k in sorted(self.tables))
        parts.append("# What a fast path may meet in a record it hands to the generic codec.\n")
        if fast.write:
            parts.append(
                "_UNWRITABLE = (TypeError, AttributeError, KeyError, ValueError, OverflowError)\n"
            )
        if fast.read:
            parts.append("_UNREADABLE = (Unusual, IndexError, UnicodeDecodeError)\n")
        if self.memos:
            parts.append(
                "# Bounded memos: a run of fields' bytes by their values (or values by bytes).\n"
            )
            parts.append("_MEMO_MAX = 4096\n")
            parts.extend(m + "\n" for m in self.memos)
        parts.append(
            "\n\n@functools.cache\ndef fast_layout() -> bool:\n"
            f'    """True when the registry\'s current `{self.name}` is the version generated for."""\n'
            "    return avro.default_registry().current(NAME).header == HEADER\n\n\n"
        )
        if self.memos:
            parts.append(
                "def _remember(memo: dict[Any, Any], key: Any, value: Any) -> Any:\n"
                "    if len(memo) >= _MEMO_MAX:\n"
                "        memo.clear()\n"
                "    memo[key] = value\n"
                "    return value\n\n\n"
            )
        parts.append("\n\n".join(reversed(self.writers)) if self.writers else "")
        if fast.write and not self._custom():
            parts.append(
                "\n\ndef encode(value: Mapping[str, Any]) -> bytes:\n"
                f'    """`value` as {self.name} bytes, identical to the generic encoder\'s (which\n'
                '    writes, or refuses, what this path does not take)."""\n'
                "    if fast_layout():\n"
                "        try:\n"
                "            return write(value)\n"
                "        except _UNWRITABLE:\n"
                "            pass  # the generic encoder writes it or says why it cannot\n"
                "    return avro.encode(NAME, value)\n"
            )
        if fast.read:
            parts.append("\n\n" if fast.write else "")
            parts.extend(text + "\n\n" for text in self.item_readers.values())
            parts.append(read)
            parts.append(
                f"\n\ndef decode(data: bytes) -> {self.name}:\n"
                '    """The record, as the generic decoder gives it (and `UndecodableRecord` where\n'
                '    that raises it)."""\n'
                "    if data[:_HEADER_SIZE] == HEADER and fast_layout():\n"
                "        try:\n"
                "            return read(data)\n"
                "        except _UNREADABLE:\n"
                "            pass  # the generic decoder reads it or says why it cannot\n"
                f"    return avro.decode_as({self.name}, data)\n"
            )
        return "".join(parts)

    def _custom(self) -> bool:
        """A writer with arguments besides the value: its caller owns the fallback."""
        return bool(self.fast.given or self.fast.embedded)


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's isort order within `from x import ...`: CONSTANTS, Classes, functions
    if name.isupper():
        return 0, name
    if name[0].isupper():
        return 1, name
    return 2, name


def _init_text(modules: dict[str, _Module]) -> str:
    plain = sorted(n for n, m in modules.items() if m.fast.write and not m._custom())
    lines = [
        '"""Avro binary written and read directly for the hot records, one module per record.\n\n'
        "GENERATED by `python -m tickwheel.adapters.avro.records_gen` from `schemas/`, do not edit\n"
        "(the options are `FAST` in `tickwheel/adapters/avro/codecs_gen.py`; decision 0214).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from collections.abc import Callable, Mapping\n"
        "from typing import Any\n\n"
        "from tickwheel.adapters.avro import encode\n",
        f"from {PACKAGE} import {', '.join(snake(n) for n in plain)}\n\n",
        "# The records whose whole value `encode_record` writes directly.\n",
        "ENCODERS: dict[str, Callable[[Mapping[str, Any]], bytes]] = {\n",
    ]
    lines += [f"    {n!r}: {snake(n)}.encode,\n" for n in plain]
    lines += [
        "}\n\n\n",
        "def encode_record(record: str, value: Mapping[str, Any]) -> bytes:\n",
        '    """`value` as `record` bytes, identical to `encode(record, value)`: directly for the\n'
        '    records in `ENCODERS`, through the generic encoder for any other."""\n',
        "    writer = ENCODERS.get(record)\n",
        "    return encode(record, value) if writer is None else writer(value)\n",
        '\n\n__all__ = ["ENCODERS", "encode_record"]\n',
    ]
    return "".join(lines)


def _ruff_format(files: dict[str, str]) -> dict[str, str]:
    """The files as `ruff format` lays them out (the generated code is formatted, not laid
    out by hand: the check compares with what the formatter makes of it)."""
    from ruff.__main__ import find_ruff_bin

    ruff = find_ruff_bin()
    out = {}
    for name, text in files.items():
        done = subprocess.run(
            # The file's own path: ruff reads the project's settings wherever this runs from.
            [ruff, "format", "--stdin-filename", str(target_dir() / name), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        )
        out[name] = done.stdout
    return out


def generate(schemas_dir: Path | None = None) -> dict[str, str]:
    """The text of every file of the `tickwheel.adapters.avro.fast` package, by file name."""
    registry = load_schemas(schemas_dir)
    modules = {}
    for name, fast in FAST.items():
        current = registry.current(name)
        modules[name] = _Module(current.schema, fast, current.header)
    files = {f"{snake(name)}.py": module.text() for name, module in modules.items()}
    files["__init__.py"] = _init_text(modules)
    return _ruff_format(files)


def target_dir() -> Path:
    return Path(__file__).resolve().parent / "fast"
