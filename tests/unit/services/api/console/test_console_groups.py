"""The operations panel's consumer groups, from the plain values `tickwheel.adapters.kafka.groups`
returns (the real-broker side is `tests/integration/test_console_group_lag.py`): each worker
group, the history sink's and the watchdog's webhook cursors are listed with their lag in
words, the timer's members own the partitions they were assigned, and another program's
group is left out."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import MemoryJobs
from tickwheel.adapters.kafka.groups import (
    GroupLag,
    GroupMember,
    PartitionLag,
    lag_of,
    partition_lag,
)
from tickwheel.clock import FakeClock
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console import mount
from tickwheel.services.api.console.operations import (
    Operations,
    consumer_groups,
    group_role,
    owners_of,
)

NOW_S = 1_798_804_800.0


def member(client: str, *partitions: tuple[str, int]) -> GroupMember:
    return GroupMember(f"{client}-id", client, "127.0.0.1", tuple(partitions))


def group(group_id: str, rows: list[tuple[str, int, int | None, int]], *members: GroupMember,
          state: str = "stable") -> GroupLag:  # fmt: skip
    lags = tuple(PartitionLag(t, p, c, e, lag_of(c, e)) for t, p, c, e in rows)
    return GroupLag(group_id, state, members, lags)


@pytest.fixture(autouse=True)
def no_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TICKWHEEL_TOPIC_PREFIX", "TICKWHEEL_HISTORY_GROUP", "TICKWHEEL_TIMER_GROUP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")


GROUPS = [
    group("tickwheel-workers", [("executions.requests", 0, 40, 40), ("executions.requests", 1, 7, 19)],
          member("w1/normal", ("executions.requests", 0), ("executions.requests", 1))),
    group("tickwheel-workers-high", [("executions.requests.high", 0, None, 3)], state="empty"),
    group("tickwheel-history", [("executions.events", 0, 100, 100)], member("history-1")),
    group("tickwheel-watchdog-webhook-3f2a", [("alerts", 0, 5, 6)], member("watchdog")),
    group("someone-elses", [("executions.events", 0, 0, 100)], member("spy")),
]  # fmt: skip


def test_a_committed_offset_behind_the_end_is_that_many_records_of_lag() -> None:
    assert (lag_of(7, 19), lag_of(40, 40), lag_of(None, 3)) == (12, 0, None)
    # A commit past a stable end (a transaction still open on the partition) is no lag.
    assert lag_of(21, 19) == 0
    workers = GROUPS[0]
    assert (workers.lag, workers.uncommitted) == (12, 0)
    assert (GROUPS[1].lag, GROUPS[1].uncommitted) == (0, 1)


def test_lag_counts_records_so_a_transactions_marker_is_no_lag() -> None:
    # Three transactions of one record each on offsets 0-5 (markers at 1, 3, 5); the group
    # read them all and committed 5 (after the last record): one offset short, no record owed.
    assert partition_lag("t", 0, 5, 0, 6, {("t", 0): []}).lag == 0
    # Committed 2: the records at 2 and 4 are owed (the markers at 3 and 5 are not).
    assert partition_lag("t", 0, 2, 0, 6, {("t", 0): [2, 4]}).lag == 2
    # A gap not read (too large, or not read in time): the offset difference, approximate.
    rough = partition_lag("t", 0, 2, 0, 6, {})
    assert (rough.lag, rough.exact) == (4, False)
    # Nothing committed: owed nothing on an empty partition, unknown on one with records.
    assert partition_lag("t", 0, None, 6, 6, {}).lag == 0
    assert partition_lag("t", 0, None, 0, 6, {}).lag is None


def test_each_tickwheel_group_is_named_by_what_it_serves_and_others_are_left_out() -> None:
    named = {"tickwheel-history": "history sink"}
    assert group_role("tickwheel-workers", named) == ("worker", "default")
    assert group_role("tickwheel-workers-high", named) == ("worker", "high")
    assert group_role("tickwheel-history", named) == ("history sink", "history sink")
    assert group_role("tickwheel-watchdog-webhook-3f2a", named) == (
        "watchdog", "webhook sink 3f2a")  # fmt: skip
    assert group_role("someone-elses", named) is None
    workers, services = consumer_groups(GROUPS)
    assert [(w["queue"], w["lag"]) for w in workers] == [("default", 12), ("high", 0)]
    assert [(s["role"], s["lag"]) for s in services] == [("history sink", 0), ("watchdog", 1)]
    assert [(p.partition, p.lag) for p in workers[0]["behind"]] == [(1, 12)]


def test_the_timer_partitions_belong_to_the_members_assigned_them() -> None:
    timer = group("tickwheel-timer", [],
                  member("t1", ("jobs.definitions", 0), ("other", 1)),
                  member("t2", ("jobs.definitions", 1)))  # fmt: skip
    owners = owners_of([timer], "jobs.definitions")
    assert {p: o["client_id"] for p, o in owners.items()} == {0: "t1", 1: "t2"}
    assert owners[0]["host"] == "127.0.0.1"


class Rows(HTMLParser):
    """data-group -> (data-lag, the row's text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and found.get("data-group"):
            self.current = str(found["data-group"])
            self.rows[self.current] = [str(found.get("data-lag"))]

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self.current = None

    def handle_data(self, data: str) -> None:
        if self.current is not None:
            self.rows[self.current].append(data)


@pytest.fixture
def client() -> Iterator[TestClient]:
    clock = FakeClock(NOW_S)
    app = FastAPI()
    app.state.backend = Backend(jobs=MemoryJobs(clock), clock=clock)
    mount(app)
    workers, services = consumer_groups(GROUPS)
    found = Operations(worker_groups=workers, service_groups=services)
    app.state.console_operations = lambda _b: found
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_the_operations_page_states_each_groups_lag_in_words(client: TestClient) -> None:
    page = client.get("/console/operations")
    assert page.status_code == 200, page.text
    parsed = Rows()
    parsed.feed(page.text)
    text = {g: " ".join(" ".join(parts[1:]).split()) for g, parts in parsed.rows.items()}
    lags = {g: parts[0] for g, parts in parsed.rows.items()}
    assert set(lags) == {"tickwheel-workers", "tickwheel-workers-high", "tickwheel-history",
                         "tickwheel-watchdog-webhook-3f2a"}  # fmt: skip
    assert lags["tickwheel-workers"] == "12"
    assert "12 behind over 2 partition(s)" in text["tickwheel-workers"]
    assert "executions.requests[1]: 12 (committed 7, end 19)" in text["tickwheel-workers"]
    assert "caught up" in text["tickwheel-history"]
    assert "1 holding records with nothing committed yet" in text["tickwheel-workers-high"]
    assert "no live member" in text["tickwheel-workers-high"]
    assert "webhook sink 3f2a" in text["tickwheel-watchdog-webhook-3f2a"]
    assert "1 behind" in text["tickwheel-watchdog-webhook-3f2a"]
