"""The overview's operations panels: timer partitions, worker groups, the watchdog's lag.

Where each fact comes from (no service is asked anything it does not already publish):
- **Timer partitions**: the owner of partition p of `jobs.definitions` is the timer group's
  member assigned it (the consumer-group description, through the Kafka admin client); how far
  it stands is its last checkpoint in `timers.state` (`__partition__/p`, written in every
  timer transaction: `updated_at` and the transaction sequence `seq`), read from the tail of
  that partition.
- **Consumer groups and their lag** (`tickwheel.adapters.kafka.groups`, plain values): every
  group named like the workers' (`tickwheel-workers`, `tickwheel-workers-<queue>`), the history
  sink's (`TICKWHEEL_HISTORY_GROUP`) and the watchdog's webhook cursors
  (`tickwheel-watchdog-webhook-<sink>`): state, members (client id = `<worker>/<priority>`,
  host, partitions held) and, per partition, committed offset against the partition's end —
  the records the group has still to take.
- **The watchdog's lag**: its checkpoint in `watchdog.state` (`__checkpoint__`): the event-time
  watermark it evaluated at, its last transaction, and its inputs' positions, compared with the
  inputs' end offsets (records not yet read).

Served as its own page (`/console/operations`), which the overview pulls in with htmx and
links to, so the overview never waits on the admin client and reads without JavaScript.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.access import console_backend
from tickwheel.services.api.console.models import approx_duration
from tickwheel.services.api.console.render import error_page, page

if TYPE_CHECKING:  # the Kafka client is loaded when the panel is first read, not on import
    from tickwheel.adapters.kafka.groups import GroupLag, GroupMember

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
    service_groups: list[dict[str, Any]] = field(default_factory=list)
    watchdog: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def _service_groups() -> dict[str, str]:
    """The groups, besides the workers' and the webhook sinks', whose committed offsets say
    how far a service has read: id -> role. (The timer commits none: its progress is its
    checkpoint in `timers.state`, shown per partition.)"""
    from tickwheel.topology import topic_name

    history = os.environ.get("TICKWHEEL_HISTORY_GROUP", "").strip() or topic_name(
        "tickwheel-history"
    )
    return {history: "history sink"}


def timer_group() -> str:
    from tickwheel.topology import topic_name

    return os.environ.get("TICKWHEEL_TIMER_GROUP") or topic_name("tickwheel-timer")


def group_role(group_id: str, named: dict[str, str]) -> tuple[str, str] | None:
    """(role, what it serves) of a tickwheel group: a queue's workers, the history sink, a
    watchdog webhook sink's cursor, the timer; None for a group that is not tickwheel's."""
    from tickwheel.topology import topic_name

    workers, watchdog = topic_name("tickwheel-workers"), topic_name("tickwheel-watchdog")
    if group_id == workers or group_id.startswith(workers + "-"):
        return "worker", group_id[len(workers) + 1 :] or "default"
    if group_id.startswith(watchdog + "-webhook-"):
        return "watchdog", "webhook sink " + group_id[len(watchdog) + len("-webhook-") :]
    if group_id in named:
        return named[group_id], named[group_id]
    return None


def group_view(group: GroupLag, role: str, serves: str) -> dict[str, Any]:
    """One group's row: members and lag in words (a group with no member is not reading)."""
    behind = [p for p in group.partitions if p.lag]
    return {
        "group_id": group.group_id,
        "state": group.state,
        "role": role,
        "queue": serves,
        "members": [member_view(m) for m in group.members],
        "lag": group.lag,
        "exact": group.exact,
        "uncommitted": group.uncommitted,
        "partitions": len(group.partitions),
        "behind": sorted(behind, key=lambda p: -(p.lag or 0))[:5],
    }


def member_view(member: GroupMember) -> dict[str, Any]:
    return {
        "client_id": member.client_id,
        "host": member.host,
        "member_id": member.member_id,
        "partitions": list(member.partitions),
    }


def owners_of(groups: Iterable[GroupLag], topic: str) -> dict[int, dict[str, Any]]:
    """Partition -> the member assigned it, over the groups."""
    owners: dict[int, dict[str, Any]] = {}
    for group in groups:
        owners.update({p: member_view(m) for p, m in group.owners(topic).items()})
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


def timer_partitions(
    owners: dict[int, dict[str, Any]], reader: Any, now_ms: int
) -> list[dict[str, Any]]:
    from tickwheel.adapters.avro import decode
    from tickwheel.topology import topic_name

    definitions, states = topic_name("jobs.definitions"), topic_name("timers.state")
    rows = []
    for partition in range(reader.partition_count(definitions)):
        record, _ = _last_record(reader, states, partition, f"__partition__/{partition}")
        checkpoint = decode(record.value, "TimerState")[1] if record is not None else None
        at = None if checkpoint is None else int(checkpoint["updated_at"])
        rows.append(
            {
                "partition": partition,
                "owner": owners.get(partition),
                "checkpoint_at": at,
                "seq": None if checkpoint is None else checkpoint.get("seq"),
                "age": None if at is None else approx_duration(now_ms - at),
            }
        )
    return rows


def consumer_groups(
    groups: Iterable[GroupLag],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the workers' groups, the other services' groups), each a row with its lag."""
    named = _service_groups()
    workers: list[dict[str, Any]] = []
    services: list[dict[str, Any]] = []
    for group in groups:
        role = group_role(group.group_id, named)
        if role is not None:
            (workers if role[0] == "worker" else services).append(group_view(group, *role))
    return workers, services


def watchdog_lag(reader: Any, now_ms: int, bootstrap: str | None = None) -> dict[str, Any] | None:
    """The watchdog's checkpoint against its inputs' ends: records, not offsets (a small gap
    is read and counted, as a group's lag is: transaction markers are no records)."""
    from tickwheel.adapters.avro import decode
    from tickwheel.adapters.kafka.groups import EXACT_GAP, readable_records
    from tickwheel.topology import topic_name

    record, _ = _last_record(reader, topic_name("watchdog.state"), 0, "__checkpoint__")
    if record is None:
        return None
    checkpoint = decode(record.value, "Alert")[1]
    details = json.loads(checkpoint.get("details") or "{}")
    gaps: dict[tuple[str, int], tuple[int, int]] = {}
    for position, offset in (details.get("offsets") or {}).items():
        topic, _, partition = str(position).rpartition(":")
        end = reader.watermarks(topic, int(partition))[1]
        if end > int(offset):
            gaps[(topic, int(partition))] = (int(offset), end)
    small = {tp: gap for tp, gap in gaps.items() if gap[1] - gap[0] <= EXACT_GAP}
    counted = readable_records(bootstrap, small, ADMIN_TIMEOUT_S)
    behind = sum(
        len(counted[tp]) if tp in counted else end - start for tp, (start, end) in gaps.items()
    )
    watermark = details.get("watermark")
    last = int(checkpoint["event_time"])
    return {
        "watermark": watermark,
        "last_transaction": last,
        "records_behind": behind,
        "lag": None if watermark is None else approx_duration(now_ms - int(watermark)),
        "since_transaction": approx_duration(now_ms - last),
    }


def _unread(name: str, exc: Exception) -> str:
    return f"{name} could not be read: {type(exc).__name__}: {exc}"


def read_operations(b: Backend) -> Operations:
    """Every panel's facts; a fact that cannot be read is a problem, never an exception."""
    from tickwheel.adapters.kafka.broker_clients import KafkaPartitionReader
    from tickwheel.adapters.kafka.groups import describe_groups
    from tickwheel.topology import topic_name

    now = b.now_ms()
    found = Operations()
    named, timer = _service_groups(), timer_group()
    groups: list[GroupLag] = []
    try:
        groups = describe_groups(
            b.bootstrap,
            lambda g: g == timer or group_role(g, named) is not None,
            ADMIN_TIMEOUT_S,
        )
    except Exception as exc:
        found.problems.append(_unread("consumer groups", exc))
    reader = KafkaPartitionReader(b.bootstrap, timeout=10.0)
    try:
        try:
            owners = owners_of(
                [g for g in groups if g.group_id == timer], topic_name("jobs.definitions")
            )
            found.timer_partitions = timer_partitions(owners, reader, now)
        except Exception as exc:
            found.problems.append(_unread("timer partitions", exc))
        found.worker_groups, found.service_groups = consumer_groups(groups)
        try:
            found.watchdog = watchdog_lag(reader, now, b.bootstrap)
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
    return page(
        request,
        "operations.html",
        {"section": "overview", "ops": found, "problems": found.problems},
    )
