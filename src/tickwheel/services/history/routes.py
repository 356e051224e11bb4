"""Which topics the history sink reads, and what each record becomes: a route per topic,
naming its table, its record (a `tickwheel.records` TypedDict) and the converters of
`rows.py` / `calendar_rows.py` that make its rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from tickwheel.adapters.avro import decode
from tickwheel.services.history import calendar_rows, rows
from tickwheel.services.history.rows import Row, Source
from tickwheel.topology import topic_name

#: The record a route's topic carries: one of `tickwheel.records`' TypedDicts.
R = TypeVar("R", bound=Mapping[str, object])
TombstoneConverter = Callable[[str, Source], Row]


@dataclass(frozen=True)
class Route(Generic[R]):
    """Where one topic's records go: a row of `table`, and rows other tables derive from the
    same record (`derived`: (table, converter) pairs). `tombstone` makes the row of a
    deletion (key, no value) on a compacted topic where one means something. `R` is the
    record `schema` names (its TypedDict in `tickwheel.records`, as the converters take it)."""

    table: str
    schema: str
    convert: Callable[[R, Source], Row]
    derived: tuple[tuple[str, Callable[[R, Source], Row]], ...] = ()
    tombstone: TombstoneConverter | None = None

    def rows(self, value: bytes, source: Source) -> list[tuple[str, Row]]:
        """Decode `value` as this route's record and make its rows (`UndecodableRecord`,
        `UnstorableRecord`: the caller dead-letters the record)."""
        _name, decoded = decode(value, expected=self.schema)
        # The one place a decoded record becomes its type: the registry decoded a complete
        # record of `schema`'s current version, whose fields are `R`'s keys (decision 0080).
        record = cast(R, decoded)
        made = [(self.table, self.convert(record, source))]
        made += [(table, convert(record, source)) for table, convert in self.derived]
        return made


def default_routes() -> dict[str, Route[Any]]:
    """Every topic the sink reads (with the deployment's topic prefix), and its table."""
    routes: dict[str, Route[Any]] = {
        "jobs.definitions": Route(
            "job_definitions",
            "JobDefinition",
            rows.job_definition_row,
            tombstone=rows.job_tombstone_row,
        ),
        "calendars": Route(
            "calendar_events",
            "Calendar",
            calendar_rows.calendar_row,
            tombstone=calendar_rows.calendar_tombstone_row,
        ),
        "executions.events": Route("execution_events", "ExecutionEvent", rows.execution_event_row),
        "executions.dlq": Route("dead_letters", "DeadLetter", rows.dead_letter_row),
        "workflows.events": Route("workflow_events", "WorkflowEvent", rows.workflow_event_row),
        "alerts": Route("alerts", "Alert", rows.alert_row),
    }
    for priority in ("high", "normal", "low"):
        # A request is also its execution's `requested` event: the timer publishes the request
        # alone, and its event row is derived here (docs/decisions/0007).
        routes[f"executions.{priority}"] = Route(
            "execution_requests",
            "ExecutionRequest",
            rows.execution_request_row,
            derived=(("execution_events", rows.requested_event_row),),
        )
    return {topic_name(name): route for name, route in routes.items()}
