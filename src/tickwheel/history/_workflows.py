"""Workflow history: the documented queries over `workflow_events`, as functions.

Each one runs a `topology/clickhouse/queries/workflow_*.sql` file (docs/history.md, "Workflow
history") on a store or an owner client. Instants are epoch milliseconds in, ISO 8601 to the
query; the answers are `QueryResult`s, except the timeline, which is a JSON-able list with
each event's `data` parsed.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from tickwheel.errors import TickwheelError
from tickwheel.history._queries import run_query
from tickwheel.history._reader import HistoryReader
from tickwheel.ports.history import QueryResult

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Defaults of an open window: all of what `DateTime64(3)` holds.
EARLIEST_MS = -2_208_988_800_000  # 1900-01-01
LATEST_MS = 10_413_792_000_000  # 2300-01-01

WORKFLOW_QUERIES = (
    "workflow_timeline",
    "workflow_open_steps",
    "workflow_step_stats",
    "workflow_approvals",
    "workflow_compensations",
)


class WorkflowNotFound(TickwheelError, LookupError):
    """The history holds no event of this workflow instance."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(
            f"no workflow {workflow_id!r} in the history (unknown id, not yet recorded by "
            "the history sink, or older than the retention)"
        )
        self.workflow_id = workflow_id


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as the ISO 8601 instant the queries' parameters take."""
    return (_EPOCH + dt.timedelta(milliseconds=ms)).isoformat()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    return value


def workflow_timeline(reader: HistoryReader, workflow_id: str) -> list[dict[str, Any]]:
    """Every recorded event of `workflow_id` in `seq` order, `data` parsed from its JSON.

    Raises `WorkflowNotFound` when the history has none."""
    rows = run_query(reader, "workflow_timeline", {"workflow_id": workflow_id}).as_dicts()
    if not rows:
        raise WorkflowNotFound(workflow_id)
    timeline = []
    for row in rows:
        entry = {key: _jsonable(value) for key, value in row.items()}
        try:
            entry["data"] = json.loads(row["data"] or "{}")
        except ValueError:
            entry["data"] = {"unparsed": row["data"]}
        timeline.append(entry)
    return timeline


def open_workflow_steps(reader: HistoryReader, as_of_ms: int) -> QueryResult:
    """Steps running, waiting or cancelling at `as_of_ms` in unfinished instances; stuck first
    (past their expectedDuration), then the longest-running."""
    return run_query(reader, "workflow_open_steps", {"as_of": iso_ms(as_of_ms)})


def _window(since_ms: int | None, until_ms: int | None) -> dict[str, str]:
    return {
        "since": iso_ms(EARLIEST_MS if since_ms is None else since_ms),
        "until": iso_ms(LATEST_MS if until_ms is None else until_ms),
    }


def workflow_step_stats(
    reader: HistoryReader, since_ms: int | None = None, until_ms: int | None = None
) -> QueryResult:
    """Step duration and failure rate per definition version and step, for the steps first
    started in [since, until) (all of them by default)."""
    return run_query(reader, "workflow_step_stats", _window(since_ms, until_ms))


def workflow_approvals(
    reader: HistoryReader, since_ms: int | None = None, until_ms: int | None = None
) -> QueryResult:
    """Approval decisions and latency per definition, step and actor, for the decisions made
    in [since, until)."""
    return run_query(reader, "workflow_approvals", _window(since_ms, until_ms))


def workflow_compensations(
    reader: HistoryReader, since_ms: int | None = None, until_ms: int | None = None
) -> QueryResult:
    """Compensations per definition version, for the instances started in [since, until)."""
    return run_query(reader, "workflow_compensations", _window(since_ms, until_ms))
