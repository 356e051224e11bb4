"""Every colour has a text label (issue 14): each element of a rendered console page that
`console.css` colours carries text that says what the colour means — its own text or
`<title>`, or, for a shape or swatch with none, the text of the list item or SVG group it sits
in; a slot or step colour's label names its status. The pages are rendered through the ASGI
client (jobs of every status, a job's grid with fired, missing, failed and late slots, a
200-step workflow's DAG, the operations panel, alerts), so the check fails the day a template
draws a colour and forgets its words."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import CannedHistory, MemoryJobs
from tests.unit.services.api.console.test_console_groups import GROUPS
from tests.unit.services.api.console.test_console_workflows import FakeWorkflows, chain_document
from tickwheel.clock import FakeClock
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import models, mount
from tickwheel.services.api.console.operations import Operations, consumer_groups
from tickwheel.services.api.console.render import STATIC

NOW_S = 1_798_804_800.0  # 2027-01-01T12:00:00Z
NOW_MS = int(NOW_S * 1000)
HOUR_MS = 3_600_000
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip
# Coloured, yet no status of their own: a DAG edge joins two labelled steps; the hatch is the
# fill pattern of missing slots (inside <defs>, drawn only through those labelled cells).
NOT_A_STATUS = {"edge", "hatch"}
STATUS_PREFIXES = ("slot-", "step-")


def coloured_classes() -> set[str]:
    """The class each rule of console.css that sets a colour applies to (its last class)."""
    css = re.sub(r"/\*.*?\*/", "", (STATIC / "console.css").read_text(), flags=re.S)
    found: set[str] = set()
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if re.search(r"(^|[;\s])(color|fill|background|stroke)\s*:", body):
            for selector in selectors.split(","):
                classes = re.findall(r"\.([A-Za-z0-9_-]+)", selector)
                found.update(classes[-1:])
    return found


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return " ".join(
            " ".join(c.split()) if isinstance(c, str) else c.text() for c in self.children
        ).strip()

    def inside(self, tag: str) -> bool:
        node = self.parent
        while node is not None and node.tag != tag:
            node = node.parent
        return node is not None


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("#root", {}, None)
        self.at = self.root
        self.nodes: list[Node] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        self.nodes.append(node)
        if tag not in VOID:
            self.at = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.at = self.at.parent or self.root

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.at = node.parent

    def handle_data(self, data: str) -> None:
        self.at.children.append(data)


def unlabelled(html: str, colours: set[str]) -> tuple[list[str], set[str]]:
    """(what is coloured without words, the coloured classes the page used)."""
    tree = Tree()
    tree.feed(html)
    problems: list[str] = []
    used: set[str] = set()
    for node in tree.nodes:
        classes = set(node.attrs.get("class", "").split()) & colours
        if not classes or node.inside("defs"):
            continue
        used |= classes
        if classes <= NOT_A_STATUS:
            continue
        label = node.text()
        if not label and node.parent is not None and node.parent.tag in ("li", "g", "td"):
            label = node.parent.text()
        for name in sorted(classes):
            status = name.split("-", 1)[1] if name.startswith(STATUS_PREFIXES) else ""
            if not label or status.replace("_", " ") not in label.replace("_", " "):
                problems.append(f"<{node.tag} class={node.attrs.get('class')!r}> says {label!r}")
    return problems, used


def _utc(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def history(jobs: MemoryJobs) -> CannedHistory:
    """Job `hourly` created 12 h ago: the 05:00 slot never requested, the 07:00 one
    dead-lettered, the 09:00 one requested 2 minutes late, the rest fired on time."""
    odd = {5: "missing", 7: "dead_lettered", 9: "late"}

    def versions(params: Mapping[str, Any]) -> list[dict[str, Any]]:
        record = jobs.records[params["job_id"]]
        return [{"event_time": _utc(NOW_MS - 12 * HOUR_MS), "version": 1, "deleted": 0,
                 "enabled": 1, "schedule_kind": "cron", "cron": record["cron"],
                 "timezone": record["timezone"], "run_at": None,
                 "definition": json.dumps({"cron": record["cron"], "type": "noop"})}]  # fmt: skip

    def audit(params: Mapping[str, Any]) -> list[dict[str, Any]]:
        rows = []
        for slot in params["expected"]:
            kind = odd.get(_utc(slot).hour, "fired")
            fired = kind != "missing"
            late = 120_000 if kind == "late" else 5
            rows.append({"scheduled_time": _utc(slot), "status": "fired" if fired else "missing",
                         "execution_id": f"exec-{slot}" if fired else "", "trigger": "scheduled",
                         "fire_time": _utc(slot) if fired else None,
                         "requested_at": _utc(slot + late) if fired else None,
                         "lateness_ms": late if fired else None,
                         "outcome": "dead_lettered" if kind == "dead_lettered" else
                         ("succeeded" if fired else ""), "skip_reason": ""})  # fmt: skip
        return rows

    return CannedHistory({"job_definition_versions": versions, "schedule_audit": audit})


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")
    for name in ("TICKWHEEL_TOPIC_PREFIX", "TICKWHEEL_HISTORY_GROUP"):
        monkeypatch.delenv(name, raising=False)
    clock = FakeClock(NOW_S)
    jobs = MemoryJobs(clock)
    for job_id in ("hourly", "stopped", "off", "overdue"):
        jobs.create({"jobId": job_id, "type": "noop", "cron": "0 * * * *", "timezone": "UTC",
                     **({"expectedMaxInterval": "1h"} if job_id == "overdue" else {})})  # fmt: skip
    jobs.update("stopped", {"enabled": False, "labels": {models.PAUSE_REASON_LABEL: "INC-7"}})
    jobs.update("off", {"enabled": False})
    jobs.records["overdue"]["createdAt"] -= 3 * HOUR_MS
    canned = history(jobs)
    steps = {f"s{n:03d}": {"status": "succeeded", "attempt": 1, "startedAt": NOW_MS - 9_000_000,
                           "endedAt": NOW_MS - 8_000_000} for n in range(198)}  # fmt: skip
    steps["s197"] = {"status": "running", "attempt": 2, "startedAt": NOW_MS - 600_000}
    steps["s196"] = {"status": "failed", "attempt": 3, "startedAt": NOW_MS - 700_000}
    steps["sign-off"] = {"status": "waiting", "round": 1, "startedAt": NOW_MS - 1000}
    flows = FakeWorkflows(chain_document(200), steps)
    workers, services = consumer_groups(GROUPS)
    incident = {"incident_id": "inc-1", "kind": "job_overdue", "severity": "critical",
                "subject": "overdue", "job_id": "overdue", "state": "open", "opened_at": NOW_MS,
                "message": "overdue is overdue", "evidence": {}, "transitions": []}  # fmt: skip
    app = FastAPI()
    app.state.backend = Backend(jobs=jobs, clock=clock, open_history=lambda: canned)
    mount(app)
    app.state.console_alerts = lambda _b: [incident]
    app.state.console_dead_letters = lambda _r, _b: []
    app.state.console_disabled = lambda _b: [
        {"job_id": "stopped", "tenant_id": "default", "owner": "payments", "reason": "INC-7",
         "by": "console:ana", "since": NOW_MS - HOUR_MS, "review_by": NOW_MS - 1, "version": 2},
    ]  # fmt: skip
    app.state.console_workflows = lambda _b: flows
    app.state.console_operations = lambda _b: Operations(worker_groups=workers,
                                                         service_groups=services)  # fmt: skip
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


PAGES = ["/console", "/console/jobs", "/console/jobs/hourly", "/console/jobs/stopped",
         "/console/workflows/wf-1", "/console/workflows", "/console/operations",
         "/console/alerts", "/console/disabled", "/console/dead-letters"]  # fmt: skip


def test_every_colour_on_every_page_has_a_text_label(client: TestClient) -> None:
    colours = coloured_classes()
    assert {"chip-ok", "slot-missing", "step-waiting", "running"} <= colours
    used: set[str] = set()
    for path in PAGES:
        page = client.get(path)
        assert page.status_code == 200, f"{path}: {page.status_code} {page.text[:300]}"
        problems, seen = unlabelled(page.text, colours)
        assert problems == [], f"{path}: {problems[:5]}"
        used |= seen
    # The pages drew the colours this check is about (it cannot pass by drawing none).
    assert {"chip-ok", "chip-paused", "chip-disabled", "chip-overdue", "chip-critical",
            "slot-fired", "slot-missing", "slot-failed", "slot-late", "step-succeeded",
            "step-running", "step-failed", "step-waiting", "chip-late"} <= used, sorted(used)  # fmt: skip


def test_a_colour_drawn_without_words_is_caught() -> None:
    colours = coloured_classes()
    bare = '<svg><rect class="slot slot-missing" x="0"/></svg><span class="chip chip-ok"></span>'
    problems, _ = unlabelled(bare, colours)
    assert len(problems) == 2
    wrong = '<svg><rect class="slot slot-missing"><title>fired: 05:00</title></rect></svg>'
    assert unlabelled(wrong, colours)[0] != []
    swatch = '<ul><li><span class="swatch slot-late"></span> late: 1</li></ul>'
    assert unlabelled(swatch, colours)[0] == []
