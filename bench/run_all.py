"""`make bench`: every benchmark in turn; each prints its figures and writes bench/reports/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "bench_limits.py",
    "bench_core.py",
    "bench_worker.py",
    "bench_history.py",
    "bench_pipeline.py",
    "bench_timer.py",
]

if __name__ == "__main__":
    failed = []
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)], check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
        sys.exit(1)
