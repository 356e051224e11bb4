"""Another git revision of this repository beside this code: the one way the A/B benches load
it. An A/B runs both revisions in one run, interleaved, because on a shared machine runs apart
in time are not comparable.

- `tree(rev)`: the revision's `src/`, `schemas/`, `topology/` and `pyproject.toml`, exported
  with `git archive` to a scratch directory (no git state touched; once per revision and
  process). A service at that revision runs as a process with `PYTHONPATH=src_of(rev)` (and,
  where its schemas differ, `TICKWHEEL_SCHEMAS_DIR=tree(rev) / "schemas"`).
- `modules_at(rev, *names)`: the named modules or packages as they were at `rev`, imported in
  this process beside today's under names of their own; references among them point at each
  other, every other import is today's code. For a piece compared in one process: the
  watchdog's evaluator, the console's models, the history sink's framing.
- `bench_module_over(src, path, name)`: a bench file's functions bound to the whole
  `tickwheel` package under `src` (another revision's), loaded beside the one imported: the
  same bench code over both revisions (the timer's profiles).

`tree_of` and `src_of` also take a directory: a tree exported by hand (or a checkout) is used
as it is.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
EXPORTED = ("src", "schemas", "topology", "pyproject.toml")


@functools.cache
def tree(rev: str) -> Path:
    """The revision's tree (`EXPORTED`), exported once per process to a scratch directory."""
    target = Path(tempfile.mkdtemp(prefix=f"tickwheel-{_safe(rev)}-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, *EXPORTED], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def tree_of(rev_or_tree: str | Path) -> Path:
    """A tree on disk as it is, else the tree of a git revision (an argparse `type=`)."""
    path = Path(rev_or_tree)
    return path if path.is_dir() else tree(str(rev_or_tree))


def src_of(rev_or_tree: str | Path) -> Path:
    """The folder holding the `tickwheel` package of a git revision or of a tree on disk."""
    path = Path(rev_or_tree)
    if path.is_dir():
        return path / "src" if (path / "src" / "tickwheel").is_dir() else path
    return tree(str(rev_or_tree)) / "src"


def modules_at(rev: str, *names: str) -> tuple[ModuleType, ...]:
    """The modules or packages `names` (dotted, e.g. `tickwheel.core.watchdog`) as of `rev`,
    importable beside today's as `<name>_at_<rev>`: their imports of one another are rewritten
    to those names, any other import is this code's."""
    src = src_of(rev)
    aliases = {name: f"{name.replace('.', '_')}_at_{_safe(rev)}" for name in names}
    into = Path(tempfile.mkdtemp(prefix="tickwheel-modules-"))
    # The longest name first: a package's submodule is rewritten before the package.
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(n) for n in sorted(aliases, key=len, reverse=True)) + r")\b"
    )
    for name, alias in aliases.items():
        path = src.joinpath(*name.split("."))
        files = (
            {f.relative_to(path): f for f in path.rglob("*.py")}
            if path.is_dir()
            else {Path(): path.with_suffix(".py")}
        )
        for relative, source in files.items():
            target = into / alias / relative if path.is_dir() else into / f"{alias}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(pattern.sub(lambda m: aliases[m.group(1)], source.read_text()))
    sys.path.insert(0, str(into))
    importlib.invalidate_caches()
    return tuple(importlib.import_module(aliases[name]) for name in names)


def bench_module_over(src: str | Path, path: str | Path, name: str) -> ModuleType:
    """The bench module at `path` bound to the `tickwheel` package under `src` (a revision or a
    tree: see `src_of`), loaded beside the one already imported: its modules are taken out of
    `sys.modules` again once loaded, and each function keeps the globals of the package it was
    loaded with (an import inside a function runs later, and gets today's code)."""
    folder = str(src_of(src))
    with _other_tickwheel(folder):
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@contextmanager
def _other_tickwheel(folder: str) -> Iterator[None]:
    def ours(key: str) -> bool:
        return key == "tickwheel" or key.startswith("tickwheel.")

    kept = {key: module for key, module in sys.modules.items() if ours(key)}
    for key in kept:
        del sys.modules[key]
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(folder)
        for key in [key for key in sys.modules if ours(key)]:
            del sys.modules[key]
        sys.modules.update(kept)


def _safe(rev: str) -> str:
    return re.sub(r"\W", "_", rev)
