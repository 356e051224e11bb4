"""Every module in bench/ imports (issue 32): a benchmark whose imports rot fails here, not on
the day someone runs it. `make bench` runs six of them; the others are run by hand, and
nothing else would notice.

All of them are imported in one child process (this one's `sys.path`, environment and threads
stay as they are), each after the last, and the child says, per module, what went wrong:
an exception, or work done at import — a thread or child process started, an environment
variable set. Importing a script costs its imports and nothing else: its work waits for
`main()`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")
ENTRY_POINTS = [
    m for m in MODULES if 'if __name__ == "__main__":' in (BENCH / f"{m}.py").read_text()
]

CHILD = """
import importlib, json, os, sys, threading
sys.path.insert(0, sys.argv[1])

def children():
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
            return f.read().split()
    except OSError:
        return []

found = {}
for name in sys.argv[2:]:
    environ, threads = dict(os.environ), {t.ident for t in threading.enumerate()}
    try:
        importlib.import_module(f"bench.{name}")
    except BaseException as error:  # SystemExit included: a script that runs at import
        found[name] = f"{type(error).__name__}: {error}"
        continue
    started = [t.name for t in threading.enumerate() if t.ident not in threads]
    changed = sorted(k for k in set(environ) | set(os.environ) if environ.get(k) != os.environ.get(k))
    problems = [f"started threads {started}"] * bool(started)
    problems += [f"started processes {children()}"] * bool(children())
    problems += [f"changed the environment: {changed}"] * bool(changed)
    found[name] = "; ".join(problems) or None
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def imported() -> dict[str, Any]:
    """What importing each bench module did (None: nothing but its imports)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), *MODULES],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("name", MODULES)
def test_bench_module_imports_and_starts_nothing(imported: dict[str, Any], name: str) -> None:
    assert imported[name] is None, f"bench/{name}.py: {imported[name]}"


def test_make_bench_runs_bench_entry_points() -> None:
    assert len(ENTRY_POINTS) >= 6, ENTRY_POINTS
    run_all = (BENCH / "run_all.py").read_text()
    listed = [
        line.strip().strip('",')
        for line in run_all.splitlines()
        if line.strip().startswith('"bench_')
    ]
    assert listed, "bench/run_all.py lists no benchmark"
    for script in listed:
        assert script.removesuffix(".py") in ENTRY_POINTS, (
            f"make bench runs {script}: not an entry point"
        )
