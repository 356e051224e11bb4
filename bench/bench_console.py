"""Benchmark of the web console's two heaviest pages, served by uvicorn on loopback and loaded
in Debian's Chromium (Playwright):

1. the jobs page with 10,000 jobs (in an in-memory job client: the page's own cost, not the
   SDK's topic scan, which `JobsClient.list` pays on every call until the single writer's
   catalogue exists; decision 0060);
2. the job page's occurrence grid over 30 days of a per-minute job (43,200 owed slots, a few
   of them missing), read from a real embedded chDB holding the definition and 86,400
   `execution_events` rows (a `requested` and a `succeeded` per fired slot), through the same
   audit the page runs.

Time to first byte is the navigation's `responseStart - requestStart` (the server's work:
reads, view-models, SVG, template); full render is `loadEventEnd` (HTML parsed, CSS and htmx
loaded, laid out). Medians of a few loads after one warm-up. Figures, never pass/fail.
Prints and writes bench/reports/console.md; with `--append LABEL`, adds the run to the end of
the report as a section named LABEL instead (before/after comparisons keep both).
Run: `.venv/bin/python bench/bench_console.py [--jobs N] [--days N] [--loads N] [--append LABEL]`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastapi import FastAPI  # noqa: E402

from tests.console.browser import chromium, playwright  # noqa: E402
from tests.console.fakes import MemoryJobs  # noqa: E402
from tickwheel.adapters.clickhouse import ChdbHistoryStore  # noqa: E402
from tickwheel.clock import FakeClock  # noqa: E402
from tickwheel.services.api.backend import Backend  # noqa: E402
from tickwheel.services.api.console import mount  # noqa: E402
from tickwheel.services.history.rows import Source, execution_event_row, job_definition_row  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

REPORT = ROOT / "bench" / "reports" / "console.md"
NOW_S = 4_076_000_000.0  # 2099: no retention expires the rows
MINUTE_MS = 60_000
CRONS = ["0 2 * * *", "*/5 * * * *", "0 * * * *", "30 9 * * 1-5", "0 0 1 * *", "15 3 * * 0"]


class KeptOpen:
    """The store as a page's reader: the page closes its reader, the benchmark keeps it."""

    def __init__(self, store: ChdbHistoryStore) -> None:
        self.store = store

    def query(self, sql: str, params: Any = None) -> Any:
        return self.store.query(sql, params)

    def close(self) -> None:
        pass


def fill_history(store: ChdbHistoryStore, jobs: MemoryJobs, days: int) -> int:
    """A per-minute job created `days` ago, every slot fired and succeeded but a few."""
    now_ms = int(NOW_S * 1000)
    created = now_ms - days * 86_400_000 - MINUTE_MS // 2
    jobs.clock = FakeClock(created / 1000)
    record = jobs.create({"jobId": "per-minute", "type": "noop", "cron": "* * * * *"})
    jobs.clock = FakeClock(NOW_S)
    source = Source("bench", 0, 0, created)
    store.insert("job_definitions", [job_definition_row(record, source)])
    first = (created // MINUTE_MS + 1) * MINUTE_MS
    slots = list(range(first, now_ms, MINUTE_MS))
    missing = set(slots[100::9000])
    rows = []
    for slot in slots:
        if slot in missing:
            continue
        execution = f"exec-{slot}"
        for kind, offset in (("requested", 40), ("succeeded", 900)):
            event = {"event_id": f"{kind}-{slot}", "event_time": slot + offset, "event_type": kind,
                     "job_id": "per-minute", "job_type": "noop", "tenant_id": "default",
                     "execution_id": execution, "attempt": 1, "scheduled_time": slot,
                     "fire_time": slot, "worker_id": "w", "lease_deadline": None,
                     "error_kind": None, "error": None,
                     "reason": "scheduled" if kind == "requested" else None, "details": "{}"}  # fmt: skip
            rows.append(execution_event_row(event, source))
    for start in range(0, len(rows), 20_000):
        store.insert("execution_events", rows[start : start + 20_000])
    return len(missing)


def serve(app: FastAPI) -> tuple[Any, int]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                           access_log=False))  # fmt: skip
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        time.sleep(0.05)
    return server, port


def measure(context: Any, url: str, loads: int) -> dict[str, float]:
    page = context.new_page()
    samples: list[tuple[float, float, int]] = []
    for index in range(loads + 1):
        page.goto(url, wait_until="load", timeout=300_000)
        timing = page.evaluate(
            "(() => { const n = performance.getEntriesByType('navigation')[0];"
            " return [n.responseStart - n.requestStart, n.loadEventEnd, n.transferSize]; })()"
        )
        if index:  # the first load warms the caches (templates, schedules, chDB parts)
            samples.append((timing[0], timing[1], int(timing[2])))
    page.close()
    return {
        "ttfb_ms": statistics.median(s[0] for s in samples),
        "render_ms": statistics.median(s[1] for s in samples),
        "bytes": statistics.median(s[2] for s in samples),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--append", metavar="LABEL", default=None,
                        help="append the run to the report as a section LABEL")  # fmt: skip
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    os.environ["TICKWHEEL_API_AUTH"] = "off"
    clock = FakeClock(NOW_S)
    jobs = MemoryJobs(clock)
    for n in range(args.jobs - 1):
        jobs.create({"jobId": f"job-{n:05d}", "type": "noop", "cron": CRONS[n % len(CRONS)],
                     "timezone": "Europe/London" if n % 2 else "UTC"})  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="tickwheel-bench-console-"))
    store = ChdbHistoryStore(workdir / "history")
    try:
        store.migrate()
        missing = fill_history(store, jobs, args.days)
        app = FastAPI()
        app.state.backend = Backend(jobs=jobs, clock=clock, open_history=lambda: KeptOpen(store))
        mount(app)
        app.state.console_alerts = lambda _backend: []
        server, port = serve(app)
        base = f"http://127.0.0.1:{port}/console"
        try:
            with playwright() as driver, chromium(driver) as context:
                listing = measure(context, f"{base}/jobs", args.loads)
                grid = measure(context, f"{base}/jobs/per-minute?days={args.days}", args.loads)
        finally:
            server.should_exit = True
    finally:
        store.close()
    load = os.getloadavg()[0]
    lines = [
        "# tickwheel web console benchmark",
        "",
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        "uvicorn and Debian's Chromium on one machine (loopback); medians of "
        f"{args.loads} loads after a warm-up; load average {load:.1f} at the end (the machine is "
        "shared: figures scale with it)",
        "",
        f"## Jobs page, {args.jobs:,} jobs (in-memory job client; first 500 rows listed)",
        f"- time to first byte: **{listing['ttfb_ms']:.0f} ms**",
        f"- full render (load event): **{listing['render_ms']:.0f} ms**",
        f"- HTML: {listing['bytes'] / 1024:.0f} KiB",
        "",
        f"## Job page, occurrence grid over {args.days} days of a per-minute job",
        f"- {args.days * 1440:,} owed slots, {missing} missing; real embedded chDB "
        f"({2 * (args.days * 1440 - missing):,} `execution_events` rows), the page's own audit",
        f"- time to first byte: **{grid['ttfb_ms']:.0f} ms**",
        f"- full render (load event): **{grid['render_ms']:.0f} ms**",
        f"- HTML: {grid['bytes'] / 1024:.0f} KiB",
    ]
    if args.append is not None:
        lines[:3] = [
            f"### {args.append}",
            "",
            f"python {platform.python_version()}, {os.cpu_count()} cores, medians of "
            f"{args.loads} loads after a warm-up; load average {load_before:.1f} at the start, "
            f"{load:.1f} at the end",
        ]
        lines = [line.replace("## ", "#### ", 1) if line.startswith("## ") else line
                 for line in lines]  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.append is None:
        REPORT.write_text(text)
    else:
        with REPORT.open("a", encoding="utf-8") as report:
            report.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
