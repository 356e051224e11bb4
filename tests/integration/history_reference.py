"""The documented analyst answers recomputed in plain Python from the published events, each
event counted once, as the SQL must: what the history-sink tests compare the queries against."""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.integration.history_scenario import EPOCH, MIN, Scenario


def _unique(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({e["event_id"]: e for e in events}.values())


def quantile_exact(values: list[int], level: float) -> int:
    """ClickHouse's quantileExact: the element at index int(level * n) of the sorted values."""
    ordered = sorted(values)
    return ordered[min(int(level * len(ordered)), len(ordered) - 1)]


def _accepted(events: list[dict[str, Any]], kinds: tuple[str, ...]) -> bool:
    fenced = {e["attempt"] for e in events if e["event_type"] == "fenced"}
    return any(e["event_type"] in kinds and e["attempt"] not in fenced for e in events)


def _by_execution(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for e in _unique(events):
        grouped.setdefault(e["execution_id"], []).append(e)
    return grouped


def reference_fire_lateness(sc: Scenario, since: int, until: int) -> list[tuple[Any, ...]]:
    groups: dict[tuple[str, int], list[tuple[int, bool]]] = {}
    for events in _by_execution(sc.events).values():
        first = [e for e in events if e["event_type"] == "requested" and e["attempt"] == 1]
        if not first:
            continue
        request = min(first, key=lambda e: e["event_time"])
        trigger, _, flag = request["reason"].partition(":")
        if trigger not in ("scheduled", "catch_up") or not since <= request["fire_time"] < until:
            continue
        hour = request["fire_time"] - request["fire_time"] % (60 * MIN)
        lateness = request["event_time"] - request["fire_time"]
        groups.setdefault((request["job_type"], hour), []).append((lateness, flag == "late"))
    return [
        (job_type, EPOCH + dt.timedelta(milliseconds=hour), len(values),
         sum(1 for _, late in values if late), quantile_exact([v for v, _ in values], 0.5),
         quantile_exact([v for v, _ in values], 0.99), max(v for v, _ in values))
        for (job_type, hour), values in sorted(groups.items())
    ]  # fmt: skip


def reference_failure_rates(sc: Scenario, since: int, until: int) -> dict[str, dict[str, Any]]:
    totals: dict[str, dict[str, Any]] = {}
    for events in _by_execution(sc.events).values():
        requested = [e for e in events if e["event_type"] == "requested"]
        if not requested or not since <= min(e["event_time"] for e in requested) < until:
            continue
        fenced = {e["attempt"] for e in events if e["event_type"] == "fenced"}
        outcome_of = {}
        for e in events:
            if (
                e["event_type"] in ("succeeded", "failed", "cancelled")
                and e["attempt"] not in fenced
            ):
                outcome_of[e["attempt"]] = e["event_type"]
        row = totals.setdefault(requested[0]["job_type"], dict.fromkeys(
            ("executions", "attempts", "finished_attempts", "failed_attempts", "retried",
             "succeeded", "dead_lettered"), 0))  # fmt: skip
        row["executions"] += 1
        row["attempts"] += len({e["attempt"] for e in requested})
        row["finished_attempts"] += len(outcome_of)
        row["failed_attempts"] += sum(1 for kind in outcome_of.values() if kind == "failed")
        row["retried"] += any(e["attempt"] > 1 for e in requested)
        row["succeeded"] += "succeeded" in outcome_of.values()
        row["dead_lettered"] += any(e["event_type"] == "dead_lettered" for e in events)
    for row in totals.values():
        finished = row["finished_attempts"]
        row["attempt_failure_rate"] = row["failed_attempts"] / finished if finished else 0.0
        row["retry_rate"] = row["retried"] / row["executions"]
        row["dead_letter_rate"] = row["dead_lettered"] / row["executions"]
    return totals


def reference_tenant_daily(sc: Scenario, since: int, until: int) -> list[tuple[Any, ...]]:
    executions = _by_execution(sc.events)
    tenant_of = {ex: events[0]["tenant_id"] for ex, events in executions.items()}
    cells: dict[tuple[dt.date, str], list[int]] = {}
    for events in executions.values():
        requested = [e["event_time"] for e in events if e["event_type"] == "requested"]
        if not requested or not since <= min(requested) < until:
            continue
        day = (EPOCH + dt.timedelta(milliseconds=min(requested))).date()
        cell = cells.setdefault((day, events[0]["tenant_id"]), [0, 0, 0])
        cell[0] += 1
        cell[1] += _accepted(events, ("succeeded",))
    for letter in {letter["dead_letter_id"]: letter for letter in sc.letters}.values():
        if since <= letter["event_time"] < until:
            day = (EPOCH + dt.timedelta(milliseconds=letter["event_time"])).date()
            cells.setdefault((day, tenant_of[letter["execution_id"]]), [0, 0, 0])[2] += 1
    return [(day, tenant, *counts) for (day, tenant), counts in sorted(cells.items())]


def reference_open_executions(sc: Scenario, as_of: int) -> list[str]:
    open_ones = []
    for execution, events in _by_execution(sc.events).items():
        seen = [e for e in events if e["event_time"] <= as_of]
        if not any(e["event_type"] == "requested" for e in seen):
            continue
        if any(e["event_type"] == "dead_lettered" for e in seen):
            continue
        if not _accepted(seen, ("succeeded", "cancelled")):
            open_ones.append(execution)
    return sorted(open_ones)


# -- the documented answers, as one comparable value ----------------------------------------
