"""Reading the history: the execution timeline, the documented analyst queries, the schedule
audit, the workflow history queries, and how a reader reaches the store (directly, or through the embedded store's owner).

    from tickwheel.history import open_history_reader, execution_timeline
    with open_history_reader() as reader:
        timeline = execution_timeline(reader, "3f0c...")

Every function takes a `HistoryReader`: a `HistoryStore` or an `OwnerClient` alike. See
docs/history.md and docs/queries.md.
"""

from tickwheel.history._audit import (
    MAX_AUDIT_SLOTS,
    ScheduleInForce,
    expected_slots,
    schedule_audit,
    schedules_in_force,
)
from tickwheel.history._calendars import CalendarNotRecorded, calendar_history
from tickwheel.history._owner import (
    LOOPBACK,
    OWNER_FILE,
    OwnerClient,
    OwnerInfo,
    OwnerUnreachable,
    owner_path,
    pid_alive,
    read_owner,
    remove_owner,
    write_owner,
)
from tickwheel.history._queries import (
    NamedQuery,
    UnknownQuery,
    analyst_queries,
    load_query,
    queries_dir,
    run_query,
)
from tickwheel.history._reader import (
    ClosableHistoryReader,
    HistoryReader,
    history_settings_from_env,
    open_history_reader,
    owner_client,
)
from tickwheel.history._timeline import (
    ExecutionNotFound,
    build_timeline,
    execution_timeline,
    sort_events,
)
from tickwheel.history._workflows import (
    WORKFLOW_QUERIES,
    WorkflowNotFound,
    open_workflow_steps,
    workflow_approvals,
    workflow_compensations,
    workflow_step_stats,
    workflow_timeline,
)

__all__ = [
    "LOOPBACK",
    "MAX_AUDIT_SLOTS",
    "OWNER_FILE",
    "WORKFLOW_QUERIES",
    "CalendarNotRecorded",
    "ClosableHistoryReader",
    "ExecutionNotFound",
    "HistoryReader",
    "NamedQuery",
    "OwnerClient",
    "OwnerInfo",
    "OwnerUnreachable",
    "ScheduleInForce",
    "UnknownQuery",
    "WorkflowNotFound",
    "analyst_queries",
    "build_timeline",
    "calendar_history",
    "execution_timeline",
    "expected_slots",
    "history_settings_from_env",
    "load_query",
    "open_history_reader",
    "open_workflow_steps",
    "owner_client",
    "owner_path",
    "pid_alive",
    "queries_dir",
    "read_owner",
    "remove_owner",
    "run_query",
    "schedule_audit",
    "schedules_in_force",
    "sort_events",
    "workflow_approvals",
    "workflow_compensations",
    "workflow_step_stats",
    "workflow_timeline",
    "write_owner",
]
