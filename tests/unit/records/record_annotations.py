"""Where the code still annotates a value as `dict[str, Any]` (decision 0158).

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
    for name, n in counts().items():
        print(f'    "{name}": {n},')
