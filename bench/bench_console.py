"""Benchmark of the web console's two heaviest pages, served by uvicorn on loopback and loaded
in Debian's Chromium (Playwright): the jobs page with 10,000 jobs (an in-memory job client:
the page's own cost, not the SDK's topic scan; decision 0060), and the job page's occurrence
grid over 30 days of a per-minute job (43,200 owed slots, a few missing) from a real embedded
chDB (a `requested` and a `succeeded` per fired slot, the other jobs' last executions).

Time to first byte is the navigation's `responseStart - requestStart` (the server's work);
full render is `loadEventEnd` (parsed, CSS and htmx loaded, laid out); medians of a few loads
after a warm-up. The raw limit is measured in the same run, its loads taking turns with the
page's: the very same bytes served precomputed by the same uvicorn, so `page / raw` is what
the console adds over transport and render at this load. Then each piece is timed in-process
(wall and process CPU, medians): the store's (SQL and its rows) apart from the console's own
(view-models, grid cells, SVG, template), with CPU per job or slot; `--ab REV` also times
the console's pieces as they were at git REV against today's, interleaved in one process.
Figures, never pass/fail. Writes bench/reports/console.md (or `--report PATH`); `--append
LABEL` adds the run to the report's end as a section LABEL.
Run: `.venv/bin/python bench/bench_console.py [--jobs N] [--days N] [--loads N] [--ab REV]`.
The data is written by `_console_fill.py`, the pages are loaded by `_console_browser.py`, the
pieces and the A/B timed by `_console_pieces.py`; this file runs them and writes the report.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from bench._console_browser import add_raw_route, figures, measure, serve  # noqa: E402
from bench._console_fill import CRONS, NOW_S, fill_fleet, fill_history  # noqa: E402
from bench._console_pieces import ab_rows, breakdown  # noqa: E402
from tests.console.browser import chromium, playwright  # noqa: E402
from tests.console.fakes import MemoryJobs  # noqa: E402
from tests.console.history_rows import KeptOpen  # noqa: E402
from tickwheel.adapters.clickhouse import ChdbHistoryStore  # noqa: E402
from tickwheel.clock import FakeClock  # noqa: E402
from tickwheel.services.api.backend import Backend  # noqa: E402
from tickwheel.services.api.console import mount  # noqa: E402

REPORT = ROOT / "bench" / "reports" / "console.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--executions-per-job", type=int, default=2)
    parser.add_argument("--append", metavar="LABEL", default=None,
                        help="append the run to the report as a section LABEL")  # fmt: skip
    parser.add_argument("--ab", metavar="REV", default=None)
    parser.add_argument("--report", type=Path, default=REPORT)
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
        fleet_rows = fill_fleet(store, jobs, args.executions_per_job)
        missing = fill_history(store, jobs, args.days)
        app = FastAPI()
        backend = Backend(jobs=jobs, clock=clock, open_history=lambda: KeptOpen(store))
        app.state.backend = backend
        mount(app)
        app.state.console_alerts = lambda _backend: []
        raw: dict[str, bytes] = {}
        add_raw_route(app, raw)
        server, port = serve(app)
        base = f"http://127.0.0.1:{port}/console"
        pages = {"jobs": f"{base}/jobs", "grid": f"{base}/jobs/per-minute?days={args.days}"}
        try:
            for name, url in pages.items():
                raw[name] = httpx.get(url, timeout=300).content
            with playwright() as driver, chromium(driver) as context:
                raws = {name: f"http://127.0.0.1:{port}/raw/{name}" for name in pages}
                listing, grid = (measure(context, {"page": pages[n], "raw": raws[n]}, args.loads)
                                 for n in ("jobs", "grid"))  # fmt: skip
        finally:
            server.should_exit = True
        pieces = breakdown(backend, args.jobs, args.days)
        versus = ab_rows(args.ab, backend, args.days) if args.ab else []
    finally:
        store.close()
    load = os.getloadavg()[0]
    lines = [
        "# tickwheel web console benchmark",
        "",
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        "uvicorn and Debian's Chromium on one machine (loopback); medians of "
        f"{args.loads} loads after a warm-up; load average {load_before:.1f} at the start, "
        f"{load:.1f} at the end (the machine is shared: figures scale with it)",
        "",
        f"## Jobs page, {args.jobs:,} jobs (in-memory job client; first 500 rows listed; "
        f"{fleet_rows:,} `execution_events` rows of their last {args.executions_per_job} "
        "executions each, folded into their outcomes)",
        *figures(listing),
        "",
        f"## Job page, occurrence grid over {args.days} days of a per-minute job",
        f"- {args.days * 1440:,} owed slots, {missing} missing; real embedded chDB "
        f"({2 * (args.days * 1440 - missing):,} `execution_events` rows), the page's own audit",
        *figures(grid),
        "",
        "## In-process pieces (medians of 5, wall and process CPU; chDB's threads count in CPU)",
        "",
        "| piece | whose | wall ms | CPU ms | CPU per item |",
        "|---|---|---|---|---|",
        *pieces,
    ]
    if versus:
        lines += ["", f"## The console's pieces at {args.ab} and now (CPU ms, medians of 7 "
                  "interleaved turns, one process)", "", "| piece | before | after | after / before |",
                  "|---|---|---|---|", *versus]  # fmt: skip
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
        args.report.write_text(text)
    else:
        with args.report.open("a", encoding="utf-8") as report:
            report.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
