"""bench/_revisions.py, the one way the A/B benches load another git revision (issue 32): a
package at a revision imports beside today's, its modules pointing at each other, and a tree
on disk is taken as it is. Run in a child process: the loaded modules stay out of this one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from bench import _revisions
import tickwheel.core.watchdog as today

(old,) = _revisions.modules_at("HEAD", "tickwheel.core.watchdog")
assert old is not today and old.__name__ == "tickwheel_core_watchdog_at_HEAD", old.__name__
assert old.evaluate.__module__.startswith("tickwheel_core_watchdog_at_HEAD."), old.evaluate.__module__
assert _revisions.src_of(_revisions.tree("HEAD")) == _revisions.tree("HEAD") / "src"
assert (_revisions.src_of("HEAD") / "tickwheel" / "__init__.py").is_file()
assert sys.modules["tickwheel.core.watchdog"] is today
print("ok")
"""


def test_a_package_at_a_revision_loads_beside_todays(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the exported tree goes with the test's
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
