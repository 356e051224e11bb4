"""The API process under cProfile, every thread, CPU time (issue 13: where a create's CPU goes).

    python bench/bench_api_profile.py OUT_PREFIX [-m tickwheel.services.api]

Each thread runs under a `cProfile.Profile` of its own timed by `time.thread_time` (CPU, not
wall: a thread waiting for a verdict or in `select` costs nothing), the main thread (uvicorn's
event loop) included. Every few seconds the threads' statistics are merged and written to
OUT_PREFIX.pstats and, sorted by own time, to OUT_PREFIX.txt (services leave with `os._exit`,
so nothing runs at exit). `bench_api_writes.py --in-flight N --profile-api OUT_PREFIX` runs
the bench's API this way; cProfile slows every call, so the figures of such a run are shares
of the API's CPU, not its throughput.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import runpy
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
WRITE_EVERY_S = 3.0
TOP = 60

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _profiled() -> cProfile.Profile:
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append(profile)
    return profile


def _patch_threads() -> None:
    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap(self: threading.Thread) -> None:
        profile = _profiled()
        profile.enable()
        try:
            original(self)
        finally:
            profile.disable()

    threading.Thread._bootstrap_inner = bootstrap  # type: ignore[attr-defined]


class _Snapshot:
    """What `pstats.Stats` loads from: a profile's statistics so far, without disabling it."""

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()
        self.stats: dict[Any, Any] = dict(profile.stats)  # type: ignore[attr-defined]

    def create_stats(self) -> None:
        pass


def _write(prefix: Path) -> None:
    with _lock:
        profiles = list(_profiles)
    merged: pstats.Stats | None = None
    for profile in profiles:
        try:
            snapshot = _Snapshot(profile)
        except Exception:  # a thread's profile changing under us: next time
            continue
        if not snapshot.stats:
            continue
        if merged is None:
            merged = pstats.Stats(snapshot)  # type: ignore[arg-type]
        else:
            merged.add(snapshot)  # type: ignore[arg-type]
    if merged is None:
        return
    merged.dump_stats(str(prefix.with_suffix(".pstats")))
    text = io.StringIO()
    stats = pstats.Stats(str(prefix.with_suffix(".pstats")), stream=text)
    stats.sort_stats("tottime").print_stats(TOP)
    stats.sort_stats("cumulative").print_stats(TOP)
    prefix.with_suffix(".txt").write_text(text.getvalue())


def main() -> None:
    prefix = Path(sys.argv[1])
    module = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "-m" else "tickwheel.services.api"

    def write_forever() -> None:
        while True:
            time.sleep(WRITE_EVERY_S)
            _write(prefix)

    writer = threading.Thread(target=write_forever, name="profile-writer", daemon=True)
    writer.start()  # started before the patch: its own CPU is not counted
    _patch_threads()
    main_profile = _profiled()
    sys.argv = [module]
    main_profile.enable()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
