"""The console's pictures as SVG text, drawn by pure functions: no I/O, no clock, no browser.

Three drawings: the occurrence grid (every owed slot of a job as a cell, **missing** ones
included: what did not happen is drawn too), an execution's timeline (one lane per attempt),
and a workflow's DAG (a layered topological layout). Every shape carries its state as text
(`data-status`, a `<title>`, a label), so colour is never the only signal and a test can read
the drawing as XML.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from operator import itemgetter
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

#: What became of an owed slot, as the grid draws it.
SLOT_STATUSES = ("fired", "late", "failed", "skipped", "paused", "missing")
#: Drawn over the others, never narrower than `PROBLEM_MIN_WIDTH`: one must see them.
PROBLEM_STATUSES = ("missing", "failed", "late")
PROBLEM_MIN_WIDTH = 3.0
MAX_CELL_WIDTH = 16.0
_DAY_MS = 86_400_000
_ROW_HEIGHT = 14
_LABEL_WIDTH = 92


class Slot(NamedTuple):
    """One owed slot of a job: its instant (epoch ms, UTC) and what became of it (a tuple:
    a month of a per-minute job builds 43,200, at half a frozen dataclass's cost)."""

    at_ms: int
    status: str
    execution_id: str | None = None


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _utc(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def _hhmm(moment: dt.datetime) -> str:
    return moment.strftime("%H:%M:%S" if moment.second else "%H:%M")


def occurrence_grid(slots: Sequence[Slot], zone: str = "UTC", width: int = 960) -> str:
    """One row per local day, each slot at its time of day; runs of one status merged.

    A run of neighbouring slots with one status is one `<rect>` (a per-minute job over 30
    days stays a few hundred shapes, not 43,200); a problem slot (missing, failed, late) is
    drawn on top, at least `PROBLEM_MIN_WIDTH` wide, and a lone one names its slot in
    `data-slot`.
    """
    tz = ZoneInfo(zone)
    days = _by_local_day(sorted(slots, key=_AT), tz)
    per_day = max((len(cells) for _, _, cells in days.values()), default=1)
    # A daily job's one cell a row stays a cell, not a bar across the day.
    cell = min(max(width / per_day, 0.5), MAX_CELL_WIDTH)
    height = _ROW_HEIGHT * max(len(days), 1) + 4
    total = _LABEL_WIDTH + width + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="occurrence-grid" role="img" '
        f'width="{total}" height="{height}" viewBox="0 0 {total} {height}" '
        f'aria-label="occurrence grid: {len(slots)} owed slots over {len(days)} days">',
        '<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse">'
        '<path d="M0,4 L4,0" class="hatch"/></pattern></defs>',
    ]
    for row, (day, (start, end, cells)) in enumerate(days.items()):
        y = row * _ROW_HEIGHT + 2
        parts.append(f'<text class="day" x="0" y="{y + _ROW_HEIGHT - 4}">{day.isoformat()}</text>')
        ordinary, problems = _runs(cells, start, end - start, cell, width)
        for run in ordinary + problems:
            parts.append(_run_rect(run, y, tz))
    parts.append("</svg>")
    return "".join(parts)


_AT = itemgetter(0)  # a Slot's instant: sorted by the C key, not a lambda a slot


def _midnight_ms(day: dt.date, tz: ZoneInfo) -> int:
    local = dt.datetime.combine(day, dt.time(0), tzinfo=tz)
    return int(local.timestamp() * 1000)


def _by_local_day(
    ordered: Sequence[Slot], tz: ZoneInfo
) -> dict[dt.date, tuple[int, int, Sequence[Slot]]]:
    """Slots grouped by local day: (the day's first instant, the next day's, its slots). Zone
    arithmetic once per day and a binary search for where the day ends, not a step a slot:
    a per-minute month is 43,200 slots and 30 days."""
    days: dict[dt.date, tuple[int, int, Sequence[Slot]]] = {}
    index = 0
    while index < len(ordered):
        day = _utc(ordered[index].at_ms).astimezone(tz).date()
        start = _midnight_ms(day, tz)
        end = _midnight_ms(day + dt.timedelta(days=1), tz)
        stop = bisect_left(ordered, end, lo=index, key=_AT)
        days[day] = (start, end, ordered[index:stop])
        index = stop
    return days


@dataclass
class _Run:
    status: str
    x: float
    end: float
    first: Slot
    last: Slot
    count: int


def _runs(
    cells: Sequence[Slot], start: int, span: int, cell: float, width: float
) -> tuple[list[_Run], ...]:
    """One day's runs of neighbouring slots of one status; each slot stands at its fraction
    of the day's real length (so a 23- or 25-hour day still fills one row). The open run is
    kept in locals (one comparison and three assignments a slot): a _Run is made per run."""
    ordinary: list[_Run] = []
    problems: list[_Run] = []
    status: str | None = None
    x0 = end = 0.0
    first = last = None
    count = 0
    half = cell * 0.5
    for slot in cells:
        x = _LABEL_WIDTH + ((slot[0] - start) / span) * width
        if slot[1] == status and x <= end + half:
            end, last, count = x + cell, slot, count + 1
            continue
        if first is not None and last is not None and status is not None:
            run = _Run(status, x0, end, first, last, count)
            (problems if status in PROBLEM_STATUSES else ordinary).append(run)
        status, x0, end, first, last, count = slot[1], x, x + cell, slot, slot, 1
    if first is not None and last is not None and status is not None:
        run = _Run(status, x0, end, first, last, count)
        (problems if status in PROBLEM_STATUSES else ordinary).append(run)
    for run in problems:
        run.end = max(run.end, run.x + PROBLEM_MIN_WIDTH)
    return ordinary, problems


def _run_rect(run: _Run, y: int, tz: ZoneInfo) -> str:
    first = _utc(run.first.at_ms).astimezone(tz)
    when = f"{first.date().isoformat()} {_hhmm(first)}"
    if run.count > 1:
        when += f" to {_hhmm(_utc(run.last.at_ms).astimezone(tz))} ({run.count} slots)"
    data = f' data-count="{run.count}"'
    if run.count == 1:
        data += f' data-slot="{_attr(_utc(run.first.at_ms).isoformat())}"'
        if run.first.execution_id:
            data += f' data-execution="{_attr(run.first.execution_id)}"'
    fill = ' fill="url(#hatch)"' if run.status == "missing" else ""
    return (
        f'<rect class="slot slot-{run.status}" data-status="{run.status}"{data}{fill} '
        f'x="{run.x:.2f}" y="{y}" width="{run.end - run.x:.2f}" height="{_ROW_HEIGHT - 2}">'
        f"<title>{run.status}: {escape(when)}</title></rect>"
    )


# -- execution timeline -------------------------------------------------------------------


def _ms(text: object) -> int | None:
    if not text:
        return None
    moment = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _utc(0)) // dt.timedelta(milliseconds=1)


def _attempt_instants(attempt: Mapping[str, Any]) -> list[int]:
    found = [_ms(attempt.get(k)) for k in ("requested_at", "fire_time", "leased_at", "outcome_at")]
    if not attempt.get("outcome_at"):  # still running: its deadline is where it may end
        found.append(_ms(attempt.get("lease_deadline")))
    found += [_ms(h) for h in attempt.get("heartbeats") or ()]
    if attempt.get("fenced"):
        found.append(_ms(attempt["fenced"].get("at")))
    return [m for m in found if m is not None]


def execution_timeline(timeline: Mapping[str, Any], width: int = 900) -> str:
    """One lane per attempt of a timeline (as `tickwheel.history.build_timeline` returns it):
    waiting from request to lease, running from lease to outcome (or to the last deadline),
    a tick per heartbeat, a cross where a write was fenced, and the outcome as text."""
    attempts: list[Mapping[str, Any]] = list(timeline.get("attempts") or ())
    instants = [m for a in attempts for m in _attempt_instants(a)]
    dead = (timeline.get("dead_letter") or {}).get("at")
    if _ms(dead) is not None:
        instants.append(_ms(dead) or 0)
    start = min(instants, default=0)
    span = max(max(instants, default=0) - start, 1)
    lane, left, plot = 30, 90, width - 90 - 160
    height = lane * max(len(attempts), 1) + 30

    def x(ms: int) -> float:
        return left + (ms - start) / span * plot

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="execution-timeline" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="timeline of {len(attempts)} attempts">'
    ]
    for index, attempt in enumerate(attempts):
        y = index * lane + 8
        number = attempt.get("attempt")
        parts.append(f'<g class="attempt" data-attempt="{_attr(number)}">')
        parts.append(f'<text x="0" y="{y + 14}">attempt {_attr(number)}</text>')
        asked = _ms(attempt.get("requested_at")) or _ms(attempt.get("fire_time"))
        leased = _ms(attempt.get("leased_at"))
        ended = _ms(attempt.get("outcome_at")) or _ms(attempt.get("lease_deadline"))
        if asked is not None:
            until = leased or ended or asked
            parts.append(_bar("waiting", x(asked), x(until), y, "waiting for a worker"))
        if leased is not None:
            outcome = attempt.get("outcome") or "running"
            parts.append(
                _bar(
                    f"running {outcome}",
                    x(leased),
                    x(ended or leased),
                    y,
                    f"leased by {attempt.get('worker_id') or '?'}",
                )
            )
        for beat in attempt.get("heartbeats") or ():
            bx = x(_ms(beat) or start)
            parts.append(
                f'<line class="heartbeat" x1="{bx:.1f}" x2="{bx:.1f}" y1="{y}" '
                f'y2="{y + 20}"><title>heartbeat {_attr(beat)}</title></line>'
            )
        fenced = attempt.get("fenced")
        if fenced:
            fx = x(_ms(fenced.get("at")) or start)
            parts.append(f'<text class="fenced" x="{fx:.1f}" y="{y + 15}">✕ fenced</text>')
        label = attempt.get("outcome") or ("running" if leased else "waiting")
        if attempt.get("accepted") is False:
            label += " (not accepted)"
        parts.append(
            f'<text class="outcome" x="{left + plot + 8}" y="{y + 14}">{escape(label)}</text></g>'
        )
    if _ms(dead) is not None:
        dx = x(_ms(dead) or start)
        parts.append(
            f'<text class="dead-lettered" x="{dx:.1f}" y="{height - 4}">dead-lettered</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _bar(kind: str, x1: float, x2: float, y: int, title: str) -> str:
    return (
        f'<rect class="{kind}" x="{x1:.1f}" y="{y}" width="{max(x2 - x1, 2):.1f}" height="20">'
        f"<title>{escape(title)}</title></rect>"
    )


# -- workflow DAG -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DagStep:
    """One step of a workflow: its stable id, the steps it waits for, and its state."""

    step_id: str
    depends_on: tuple[str, ...] = ()
    state: str = "pending"


@dataclass(frozen=True, slots=True)
class Placed:
    step: DagStep
    layer: int
    row: int
    x: int
    y: int


NODE_W, NODE_H, GAP_X, GAP_Y = 150, 30, 50, 14


class CyclicWorkflow(ValueError):
    """The steps' dependencies form a cycle (or name a step that does not exist)."""


def dag_layout(steps: Iterable[DagStep]) -> list[Placed]:
    """A layered layout: a step's layer is its longest path from a root, so every edge goes
    right; within a layer, steps are ordered by the mean row of what they wait for."""
    by_id = {s.step_id: s for s in steps}
    layer: dict[str, int] = {}
    waiting = {sid: set(s.depends_on) for sid, s in by_id.items()}
    for sid, deps in waiting.items():
        unknown = deps - by_id.keys()
        if unknown:
            raise CyclicWorkflow(f"step {sid!r} waits for unknown steps {sorted(unknown)}")
    ready = sorted(sid for sid, deps in waiting.items() if not deps)
    dependents: dict[str, list[str]] = {sid: [] for sid in by_id}
    for sid, s in by_id.items():
        for dep in s.depends_on:
            dependents[dep].append(sid)
    for sid in ready:
        layer[sid] = 0
    queue = list(ready)
    while queue:
        sid = queue.pop()
        for nxt in dependents[sid]:
            layer[nxt] = max(layer.get(nxt, 0), layer[sid] + 1)
            waiting[nxt].discard(sid)
            if not waiting[nxt]:
                queue.append(nxt)
    if len(layer) != len(by_id) or any(waiting.values()):
        raise CyclicWorkflow("the steps' dependencies form a cycle")
    layers: dict[int, list[str]] = {}
    for sid in sorted(by_id, key=lambda s: (layer[s], s)):
        layers.setdefault(layer[sid], []).append(sid)
    row_of: dict[str, float] = {}
    placed: list[Placed] = []
    for number in sorted(layers):
        members = layers[number]
        members.sort(key=lambda s: _mean(row_of[d] for d in by_id[s].depends_on))
        for row, sid in enumerate(members):
            row_of[sid] = row
            placed.append(
                Placed(
                    by_id[sid],
                    number,
                    row,
                    10 + number * (NODE_W + GAP_X),
                    10 + row * (NODE_H + GAP_Y),
                )
            )
    return placed


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def dag(steps: Iterable[DagStep]) -> str:
    """The workflow's DAG: a box per step (its id and state as text), an arrow per wait."""
    placed = dag_layout(steps)
    at = {p.step.step_id: p for p in placed}
    width = max((p.x for p in placed), default=0) + NODE_W + 20
    height = max((p.y for p in placed), default=0) + NODE_H + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="workflow-dag" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="workflow of {len(placed)} steps">'
    ]
    for p in placed:
        for dep in p.step.depends_on:
            src = at[dep]
            parts.append(
                f'<line class="edge" data-from="{_attr(dep)}" data-to="{_attr(p.step.step_id)}" '
                f'x1="{src.x + NODE_W}" y1="{src.y + NODE_H // 2}" x2="{p.x}" '
                f'y2="{p.y + NODE_H // 2}"/>'
            )
    for p in placed:
        sid, state = _attr(p.step.step_id), _attr(p.step.state)
        parts.append(
            f'<g class="step step-{state}" data-step="{sid}" data-state="{state}">'
            f'<rect x="{p.x}" y="{p.y}" width="{NODE_W}" height="{NODE_H}" rx="4"/>'
            f'<text x="{p.x + 6}" y="{p.y + 13}">{escape(p.step.step_id[:22])}</text>'
            f'<text class="state" x="{p.x + 6}" y="{p.y + 25}">{state}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
