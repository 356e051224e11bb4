"""Where the code still annotates a value as `dict[str, Any]`, or decodes a record by name
into an untyped dict instead of through `decode_as` (decisions 0157, 0158).

Counted in annotations only (parameters, returns, annotated assignments and dataclass
fields), by walking each module's syntax tree, so comments, docstrings and casts do not
count. `python -m tests.unit.records.record_annotations` prints the table
`test_records_adoption.py` pins, to paste when a file's count went down.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "tickwheel"
UNTYPED = "dict[str, Any]"


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            yield from (a.annotation for a in every if a.annotation is not None)
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def untyped_annotations(path: Path) -> list[int]:
    """The line of each `dict[str, Any]` in an annotation of `path` (once per occurrence)."""
    lines = []
    for annotation in _annotations(ast.parse(path.read_text(), str(path))):
        lines += [annotation.lineno] * ast.unparse(annotation).count(UNTYPED)
    return sorted(lines)


def _is_decode(call: ast.expr) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name != "decode":
        return False
    named = [a for a in call.args[1:2] if isinstance(a, ast.Constant)]
    named += [k.value for k in call.keywords if k.arg == "expected"]
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in named)


def named_decodes(path: Path) -> list[int]:
    """The line of each `decode(data, "Record")[1]` in `path`: a record decoded by its name
    into `dict[str, Any]`, where `decode_as(Record, data)` gives its type."""
    tree = ast.parse(path.read_text(), str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and _is_decode(node.value)
    )


@functools.cache
def decode_counts(package: Path = PACKAGE) -> dict[str, int]:
    """`decode(data, "Record")[1]` per module, by path under `src/tickwheel` (non-zero)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        n = len(named_decodes(path))
        if n:
            found[path.relative_to(package).as_posix()] = n
    return found


@functools.cache
def counts(package: Path = PACKAGE) -> dict[str, int]:
    """`dict[str, Any]` annotations per module, by path under `src/tickwheel` (non-zero)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        n = len(untyped_annotations(path))
        if n:
            found[path.relative_to(package).as_posix()] = n
    return found


if __name__ == "__main__":
    print("CEILINGS = {")
    for name, n in counts().items():
        print(f'    "{name}": {n},')
    print("}\nNAMED_DECODES = {")
    for name, n in decode_counts().items():
        print(f'    "{name}": {n},')
    print("}")
