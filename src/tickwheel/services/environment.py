"""The environment a service reads, listed in its `--help` (issue 10 item 7).

Each service's settings read their variables where they are used (`os.environ.get(NAME,
default)`); a hand-kept list beside them would drift. So the help is made from the code: the
service package's modules (and the shared ones every service reads through) are parsed, not
imported, and every variable they read by a literal name is listed with its literal default. docs/deploy.md says what each one means.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
from pathlib import Path

# Names a service can read: its own (TICKWHEEL_*), the cluster's and the history server's.
_PREFIXES = ("TICKWHEEL_", "KAFKA_", "CLICKHOUSE_")


_NAME = re.compile(r"(?:TICKWHEEL|KAFKA|CLICKHOUSE)_[A-Z0-9_]*[A-Z0-9]")


def _is_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _literal_name(node: ast.AST) -> str | None:
    value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
    return value if isinstance(value, str) and _NAME.fullmatch(value) else None


def _read(tree: ast.AST) -> dict[str, str | None]:
    """Variables named in one module: every string literal that is a variable's whole name
    (`os.environ.get(NAME, ...)`, `os.environ[NAME]`, a settings helper's `_seconds(NAME, 60)`,
    a module constant `URL_VAR = NAME` read elsewhere), with a default where a getter gives
    one: the literal second argument of a call whose first argument is the name."""
    found: dict[str, str | None] = {}
    for node in ast.walk(tree):
        name = _literal_name(node)
        if name is not None:
            found.setdefault(name, None)
        if isinstance(node, ast.Call) and node.args:
            name = _literal_name(node.args[0])
            callee = getattr(node.func, "attr", getattr(node.func, "id", ""))
            # A getter's second argument is its default; an error's (`InvalidInput(NAME,
            # "is not set ...")`, a class) is its message.
            getter = isinstance(callee, str) and not callee[:1].isupper()
            has_default = len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
            if name and getter and has_default and found.get(name) is None:
                found[name] = repr(node.args[1].value)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            name = _literal_name(node.slice)
            if name is not None:
                found.setdefault(name, None)
    return found


def _files(name: str) -> list[Path]:
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ValueError(f"no module {name!r}")
    if spec.submodule_search_locations:
        return [
            p
            for folder in spec.submodule_search_locations
            for p in sorted(Path(folder).rglob("*.py"))
        ]
    return [Path(spec.origin)] if spec.origin else []


# What every service reads through the shared modules: the cluster and the topic names.
COMMON = ("tickwheel.adapters.kafka.config", "tickwheel.topology")


def variables_read_by(module: str) -> dict[str, str | None]:
    """Every environment variable a module (or each module of a package) reads by a literal
    name, with its literal default (None: none, or one computed at run time), by name."""
    found: dict[str, str | None] = {}
    for path in _files(module):
        for name, default in _read(ast.parse(path.read_text(encoding="utf-8"))).items():
            if found.get(name) is None:
                found[name] = default
    return dict(sorted(found.items()))


def environment_epilog(*packages: str) -> str:
    """The `--help` epilog: each variable the packages read, with its default."""
    merged: dict[str, str | None] = {}
    for package in (*packages, *COMMON):
        for name, default in variables_read_by(package).items():
            if merged.get(name) is None:
                merged[name] = default
    width = max((len(n) for n in merged), default=0)
    lines = [
        f"  {name:<{width}}  {'default ' + default if default is not None else ''}".rstrip()
        for name, default in sorted(merged.items())
    ]
    return "environment (docs/deploy.md says what each means):\n" + "\n".join(lines)


def service_parser(package: str, description: str | None = None) -> argparse.ArgumentParser:
    """An argument parser for `python -m <package>` whose help lists the environment it reads."""
    return argparse.ArgumentParser(
        prog=f"python -m {package}",
        description=description,
        epilog=environment_epilog(package),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
