"""The console benchmark's in-process side: each piece of the two pages timed (wall and
process CPU), the store's apart from the console's, and an A/B of the console's pieces at a
git revision against today's, interleaved in one process (`bench/bench_console.py`)."""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

from tickwheel.services.api.backend import Backend


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


CONSOLE = "tickwheel.services.api.console"


def old_code(rev: str) -> tuple[Any, Any, dict[str, str]]:
    """The console's `models` and `svg` modules and its queries as they were at `rev` (git),
    importable beside today's (bench/_revisions.py): an A/B in one process, interleaved."""
    from bench._revisions import modules_at, src_of

    old_svg, old_models = modules_at(rev, f"{CONSOLE}.svg", f"{CONSOLE}.models")
    queries = src_of(rev).joinpath(*CONSOLE.split("."), "queries")
    sql = {
        n: (queries / f"{n}.sql").read_text()
        for n in ("console_executions", "console_job_outcomes")
    }
    return old_models, old_svg, sql


def ab_rows(rev: str, b: Backend, days: int, rounds: int = 7) -> list[str]:
    """Old (`rev`) against today's code, piece by piece, taking turns in one process."""
    from tickwheel.services.api.console import models, reads, svg
    from tickwheel.services.api.console.pages import DAY_MS

    old_models, old_svg, old_sql = old_code(rev)
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
