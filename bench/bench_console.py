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
"""

from __future__ import annotations

import argparse
import gc
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

import httpx  # noqa: E402
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


def _event(job_id: str, execution: str, kind: str, slot: int, at: int) -> dict[str, Any]:
    return {"event_id": f"{kind}-{execution}", "event_time": at, "event_type": kind,
            "job_id": job_id, "job_type": "noop", "tenant_id": "default",
            "execution_id": execution, "attempt": 1, "scheduled_time": slot, "fire_time": slot,
            "worker_id": "w", "lease_deadline": None, "error_kind": None, "error": None,
            "reason": "scheduled" if kind == "requested" else None, "details": "{}"}  # fmt: skip


def _insert(store: ChdbHistoryStore, events: list[dict[str, Any]], source: Source) -> None:
    rows = [execution_event_row(event, source) for event in events]
    for start in range(0, len(rows), 20_000):
        store.insert("execution_events", rows[start : start + 20_000])


def fill_fleet(store: ChdbHistoryStore, jobs: MemoryJobs, per_job: int) -> int:
    """Every other job's last `per_job` executions (each 7th job's newest one failed, so the
    jobs page has outcomes to fold and late chips to show); the rows written."""
    now_ms, events = int(NOW_S * 1000), []
    for n, record in enumerate(r for r in jobs.list() if r["jobId"] != "per-minute"):
        for k in range(per_job):
            slot, execution = now_ms - (k + 1) * 3_600_000 - n, f"x-{n}-{k}"
            last = "failed" if n % 7 == 0 and k == 0 else "succeeded"
            events.append(_event(record["jobId"], execution, "requested", slot, slot + 40))
            events.append(_event(record["jobId"], execution, last, slot, slot + 900))
    _insert(store, events, Source("bench", 0, 0, now_ms))
    return len(events)


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
    events = []
    for slot in slots:
        if slot not in missing:
            events.append(_event("per-minute", f"exec-{slot}", "requested", slot, slot + 40))
            events.append(_event("per-minute", f"exec-{slot}", "succeeded", slot, slot + 900))
    _insert(store, events, source)
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


def add_raw_route(app: FastAPI, bodies: dict[str, bytes]) -> None:
    """`/raw/<page>`: a page's bytes as captured, with the console's headers: the raw limit."""
    from fastapi.responses import Response

    from tickwheel.services.api.console.render import headers

    @app.get("/raw/{name}")
    def raw(name: str) -> Response:
        return Response(bodies[name], media_type="text/html; charset=utf-8", headers=headers())


def figures(measured: dict[str, dict[str, float]]) -> list[str]:
    page, raw = measured["page"], measured["raw"]
    return [
        f"- time to first byte: **{page['ttfb_ms']:.0f} ms** (the same bytes precomputed: "
        f"{raw['ttfb_ms']:.0f} ms, ratio {page['ttfb_ms'] / max(raw['ttfb_ms'], 0.1):.1f})",
        f"- full render (load event): **{page['render_ms']:.0f} ms** (precomputed: "
        f"{raw['render_ms']:.0f} ms, ratio {page['render_ms'] / max(raw['render_ms'], 0.1):.2f})",
        f"- HTML: {page['bytes'] / 1024:.0f} KiB",
    ]


def _timing(page: Any, url: str) -> tuple[float, float, int]:
    page.goto(url, wait_until="load", timeout=300_000)
    timing = page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return [n.responseStart - n.requestStart, n.loadEventEnd, n.transferSize]; })()"
    )
    return timing[0], timing[1], int(timing[2])


def measure(context: Any, urls: dict[str, str], loads: int) -> dict[str, dict[str, float]]:
    """Each URL loaded `loads` times after a warm-up, the URLs taking turns (a page and its
    raw limit see the same moments of a shared machine)."""
    page = context.new_page()
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in urls}
    for index in range(loads + 1):
        for name, url in urls.items():
            timing = _timing(page, url)
            if index:  # the first load warms the caches (templates, schedules, chDB parts)
                samples[name].append(timing)
    page.close()
    return {
        name: {
            "ttfb_ms": statistics.median(s[0] for s in got),
            "render_ms": statistics.median(s[1] for s in got),
            "bytes": statistics.median(s[2] for s in got),
        }
        for name, got in samples.items()
    }


def timed(call: Any, runs: int = 5) -> tuple[float, float, Any]:
    """(median wall ms, median process CPU ms, the last result) of `call()`."""
    walls, cpus, result = [], [], None
    for _ in range(runs):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    return statistics.median(walls), statistics.median(cpus), result


def breakdown(b: Backend, job_count: int, days: int) -> list[str]:
    """The two pages' pieces timed in-process, as rows of the report's table: the store's
    (SQL in chDB and reading its rows) and the console's own."""
    from starlette.requests import Request

    from tickwheel.services.api.console import models, reads, render, svg
    from tickwheel.services.api.console.pages import DAY_MS

    request = Request({"type": "http", "method": "GET", "path": "/console/jobs",
                       "query_string": b"", "headers": []})  # fmt: skip
    now = b.now_ms()
    h = reads.History(b.open_history())
    records = b.jobs.list()
    slot_count = days * 1440
    rows: list[str] = []

    def row(piece: str, whose: str, call: Any, per: int = 0, unit: str = "") -> Any:
        wall, cpu, result = timed(call)
        each = f"{cpu * 1000 / per:.2f} µs a {unit}" if per else ""
        rows.append(f"| {piece} | {whose} | {wall:,.1f} | {cpu:,.1f} | {each} |")
        return result

    def job_rows() -> list[models.JobRow]:
        memo: models.ScheduleMemo = {}
        none = models.JobOutcome()
        return [models.job_row(r, outcomes.get(r["jobId"], none), now, (), memo) for r in records]

    outcomes = row("`console_job_outcomes` (every job's)", "store", lambda: reads.job_outcomes(h))
    listed = row("job rows (chip, schedule in words, next run)", "console", job_rows,
                 job_count, "job")  # fmt: skip
    row("of which `schedule_key`", "console", lambda: [models.schedule_key(r) for r in records],
        job_count, "job")  # fmt: skip
    shown = row("filter and sort", "console", lambda: models.filter_rows(listed), job_count, "job")
    context = {"section": "jobs", "rows": shown, "total": len(listed), "q": "", "status": "",
               "counts": dict.fromkeys(models.STATUSES, 0), "statuses": models.STATUSES,
               "problems": [], "error": None, "tenant": "", "tenants": ["default"]}  # fmt: skip
    template = render.env.get_template("jobs.html")
    row("jobs template (500 rows listed)", "console",
        lambda: template.render(request=request, flash=None, **context), 500, "row")  # fmt: skip
    audit = row(f"schedule audit over {days} days (`audit_window`)", "store",
                lambda: reads.audit(h, "per-minute", now - days * DAY_MS, now))  # fmt: skip
    slots = row("grid cells (`grid_slots`)", "console", lambda: models.grid_slots(audit),
                slot_count, "slot")  # fmt: skip
    row("status counts", "console", lambda: models.status_counts(slots), slot_count, "slot")
    row("grid SVG (`occurrence_grid`)", "console", lambda: svg.occurrence_grid(slots, "UTC"),
        slot_count, "slot")  # fmt: skip
    row("`console_executions` (20 listed)", "store", lambda: reads.job_executions(h, "per-minute"))
    row("`console_job_outcome` (this job's)", "store",
        lambda: reads.job_outcomes(h, "per-minute"))  # fmt: skip
    row("`job_definition_versions`", "store", lambda: reads.job_versions(h, "per-minute"))
    return rows


CONSOLE = "src/tickwheel/services/api/console"


def old_code(rev: str, into: Path) -> tuple[Any, Any, dict[str, str]]:
    """The console's `models` and `svg` modules and its queries as they were at `rev` (git),
    importable beside today's: an A/B in one process, interleaved."""
    import importlib
    import subprocess

    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip

    (into / "console_old_svg.py").write_text(show(f"{CONSOLE}/svg.py"))
    (into / "console_old_models.py").write_text(show(f"{CONSOLE}/models.py").replace(
        "from tickwheel.services.api.console.svg import", "from console_old_svg import"))  # fmt: skip
    sys.path.insert(0, str(into))
    queries = {n: show(f"{CONSOLE}/queries/{n}.sql")
               for n in ("console_executions", "console_job_outcomes")}  # fmt: skip
    return importlib.import_module("console_old_models"), importlib.import_module(
        "console_old_svg"), queries  # fmt: skip


def ab_rows(rev: str, b: Backend, days: int, rounds: int = 7) -> list[str]:
    """Old (`rev`) against today's code, piece by piece, taking turns in one process."""
    from tickwheel.services.api.console import models, reads, svg
    from tickwheel.services.api.console.pages import DAY_MS

    old_models, old_svg, old_sql = old_code(rev, Path(tempfile.mkdtemp(prefix="console-ab-")))
    h = reads.History(b.open_history())
    now, records = b.now_ms(), b.jobs.list()
    audit = reads.audit(h, "per-minute", now - days * DAY_MS, now)
    assert audit is not None
    old_slots, new_slots = old_models.grid_slots(audit), models.grid_slots(audit)
    assert old_svg.occurrence_grid(old_slots) == svg.occurrence_grid(new_slots), "grid changed"

    def query(sql: str, params: dict[str, Any]) -> Any:
        assert h.reader is not None
        return h.reader.query(sql, params).as_dicts()

    def job_rows(m: Any) -> Any:
        memo: dict[Any, Any] = {}
        return [m.job_row(r, m.JobOutcome(), now, (), memo) for r in records]

    params = {"job_id": "per-minute", "limit": 20}
    pieces = {
        "job rows, every job": (lambda: job_rows(old_models), lambda: job_rows(models)),
        "grid cells": (lambda: old_models.grid_slots(audit), lambda: models.grid_slots(audit)),
        "status counts": (lambda: old_models.status_counts(old_slots),
                          lambda: models.status_counts(new_slots)),
        "grid SVG": (lambda: old_svg.occurrence_grid(old_slots),
                     lambda: svg.occurrence_grid(new_slots)),
        "the job's executions (SQL)": (lambda: query(old_sql["console_executions"], params),
                                       lambda: reads.job_executions(h, "per-minute")),
        "the job's outcome (SQL)": (lambda: query(old_sql["console_job_outcomes"], {}),
                                    lambda: reads.job_outcomes(h, "per-minute")),
    }  # fmt: skip
    got: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in pieces}
    for turn in range(rounds):
        for name, (before, after) in pieces.items():
            for side, call in sorted(enumerate((before, after)), reverse=bool(turn % 2)):
                got[name][side].append(timed(call, runs=1)[1])
    rows = []
    for name, (before, after) in got.items():
        a, z = statistics.median(before), statistics.median(after)
        rows.append(f"| {name} | {a:,.1f} | {z:,.1f} | {z / max(a, 0.001):.2f} |")
    return rows


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
