"""The overview's operations panels: timer partitions, worker groups, the watchdog's lag.

Where each fact comes from (no service is asked anything it does not already publish):
- **Timer partitions**: the owner of partition p of `jobs.definitions` is the timer group's
  member assigned it (the consumer-group description, through the Kafka admin client); how far
  it stands is its last checkpoint in `timers.state` (`__partition__/p`, written in every
  timer transaction: `updated_at` and the transaction sequence `seq`), read from the tail of
  that partition.
- **Worker groups**: every consumer group named like the workers' (`tickwheel-workers`,
  `tickwheel-workers-<queue>`), described: state, members (client id = `<worker>/<priority>`,
  host) and how many request partitions each holds.
- **The watchdog's lag**: its checkpoint in `watchdog.state` (`__checkpoint__`): the event-time
  watermark it evaluated at, its last transaction, and its inputs' positions, compared with the
  inputs' end offsets (records not yet read).

Served as its own page (`/console/operations`), which the overview pulls in with htmx and
links to, so the overview never waits on the admin client and reads without JavaScript.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.models import approx_duration
from tickwheel.services.api.console.render import error_page, page

router = APIRouter(include_in_schema=False)
#: How many of a state partition's last records are searched for its checkpoint (written in
#: every transaction, so it is among the last few unless a transaction wrote many states).
CHECKPOINT_TAIL = 500
ADMIN_TIMEOUT_S = 5.0


@dataclass
class Operations:
    """What the panels show; `problems` names each fact that could not be read, and why."""

    timer_partitions: list[dict[str, Any]] = field(default_factory=list)
    worker_groups: list[dict[str, Any]] = field(default_factory=list)
    watchdog: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def _groups(bootstrap: str | None, wanted: Callable[[str], bool]) -> list[Any]:
    """Descriptions of the consumer groups whose id `wanted` accepts."""
    from tickwheel.adapters.kafka.admin import admin_client

    admin = admin_client(bootstrap, quiet=True)
    listed = admin.list_consumer_groups(request_timeout=ADMIN_TIMEOUT_S).result(ADMIN_TIMEOUT_S)
    ids = sorted(g.group_id for g in listed.valid if wanted(g.group_id))
    if not ids:
        return []
    futures = admin.describe_consumer_groups(ids, request_timeout=ADMIN_TIMEOUT_S)
    return [futures[i].result(ADMIN_TIMEOUT_S) for i in ids]


def _state_name(group: Any) -> str:
    state = getattr(group, "state", None)
    return str(getattr(state, "name", state) or "unknown").lower()


def member_view(member: Any) -> dict[str, Any]:
    partitions = [(tp.topic, tp.partition) for tp in member.assignment.topic_partitions]
    return {"client_id": member.client_id, "host": member.host.lstrip("/"),
            "member_id": member.member_id, "partitions": partitions}  # fmt: skip


def owners_of(groups: Iterable[Any], topic: str) -> dict[int, dict[str, Any]]:
    """Partition → the member assigned it, over the groups' descriptions."""
    owners: dict[int, dict[str, Any]] = {}
    for group in groups:
        for member in group.members:
            view = member_view(member)
            for assigned_topic, partition in view["partitions"]:
                if assigned_topic == topic:
                    owners[partition] = view
    return owners


def _last_record(reader: Any, topic: str, partition: int, key: str) -> tuple[Any, int]:
    """The newest record under `key` among the partition's last CHECKPOINT_TAIL, and the
    partition's end offset."""
    low, high = reader.watermarks(topic, partition)
    found = None
    for record in reader.read_to_end(
        topic, [partition], {partition: max(low, high - CHECKPOINT_TAIL)}
    ):
        if record.key == key and record.value is not None:
            found = record
    return found, high


def timer_partitions(bootstrap: str | None, reader: Any, now_ms: int) -> list[dict[str, Any]]:
    from tickwheel.adapters.avro import decode
    from tickwheel.topology import topic_name

    definitions, states = topic_name("jobs.definitions"), topic_name("timers.state")
    group = os.environ.get("TICKWHEEL_TIMER_GROUP") or topic_name("tickwheel-timer")
    owners = owners_of(_groups(bootstrap, lambda g: g == group), definitions)
    rows = []
    for partition in range(reader.partition_count(definitions)):
        record, _ = _last_record(reader, states, partition, f"__partition__/{partition}")
        checkpoint = decode(record.value, "TimerState")[1] if record is not None else None
        at = None if checkpoint is None else int(checkpoint["updated_at"])
        rows.append({"partition": partition, "owner": owners.get(partition),
                     "checkpoint_at": at, "seq": None if checkpoint is None else checkpoint.get("seq"),
                     "age": None if at is None else approx_duration(now_ms - at)})  # fmt: skip
    return rows


def worker_groups(bootstrap: str | None) -> list[dict[str, Any]]:
    from tickwheel.topology import topic_name

    prefix = topic_name("tickwheel-workers")
    rows = []
    for group in _groups(bootstrap, lambda g: g == prefix or g.startswith(prefix + "-")):
        members = [member_view(m) for m in group.members]
        rows.append({"group_id": group.group_id, "state": _state_name(group),
                     "queue": group.group_id[len(prefix) + 1 :] or "default",
                     "members": sorted(members, key=lambda m: m["client_id"])})  # fmt: skip
    return rows


def watchdog_lag(reader: Any, now_ms: int) -> dict[str, Any] | None:
    from tickwheel.adapters.avro import decode
    from tickwheel.topology import topic_name

    record, _ = _last_record(reader, topic_name("watchdog.state"), 0, "__checkpoint__")
    if record is None:
        return None
    checkpoint = decode(record.value, "Alert")[1]
    details = json.loads(checkpoint.get("details") or "{}")
    behind = 0
    for position, offset in (details.get("offsets") or {}).items():
        topic, _, partition = str(position).rpartition(":")
        behind += max(0, reader.watermarks(topic, int(partition))[1] - int(offset))
    watermark = details.get("watermark")
    last = int(checkpoint["event_time"])
    return {"watermark": watermark, "last_transaction": last, "records_behind": behind,
            "lag": None if watermark is None else approx_duration(now_ms - int(watermark)),
            "since_transaction": approx_duration(now_ms - last)}  # fmt: skip


def _unread(name: str, exc: Exception) -> str:
    return f"{name} could not be read: {type(exc).__name__}: {exc}"


def read_operations(b: Backend) -> Operations:
    """Every panel's facts; a fact that cannot be read is a problem, never an exception."""
    from tickwheel.adapters.kafka.broker_clients import KafkaPartitionReader

    now = b.now_ms()
    found = Operations()
    reader = KafkaPartitionReader(b.bootstrap, timeout=10.0)
    try:
        try:
            found.timer_partitions = timer_partitions(b.bootstrap, reader, now)
        except Exception as exc:
            found.problems.append(_unread("timer partitions", exc))
        try:
            found.worker_groups = worker_groups(b.bootstrap)
        except Exception as exc:
            found.problems.append(_unread("worker groups", exc))
        try:
            found.watchdog = watchdog_lag(reader, now)
        except Exception as exc:
            found.problems.append(_unread("the watchdog's checkpoint", exc))
    finally:
        reader.close()
    return found


@router.get("/operations", response_class=HTMLResponse)
async def operations_page(request: Request) -> Response:
    b: Backend = console_backend(request)
    try:
        found = await run_in_threadpool(request.app.state.console_operations, b)
    except Exception as exc:
        return error_page(request, exc, "overview")
    return page(request, "operations.html", {"section": "overview", "ops": found,
                                             "problems": found.problems})  # fmt: skip
