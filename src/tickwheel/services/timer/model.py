"""The service's side of the scheduler's job model (decision 0090): the pure parts live in
`tickwheel.core.timer.jobs` and `.writes`; here a definition is compiled with this process's
calendar book, and the names the service and its tests use stay importable."""

from __future__ import annotations

from typing import Any

from tickwheel.core.timer import jobs as _jobs
from tickwheel.core.timer.jobs import (
    CLOCK_SKEW_MS as CLOCK_SKEW_MS,
)
from tickwheel.core.timer.jobs import (
    JobEntry as JobEntry,
)
from tickwheel.core.timer.jobs import (
    belongs_to_a_namesake as belongs_to_a_namesake,
)
from tickwheel.core.timer.jobs import (
    is_a_namesakes_request as is_a_namesakes_request,
)
from tickwheel.core.timer.jobs import (
    shared_next_after as shared_next_after,
)
from tickwheel.core.timer.jobs import (
    shared_period as shared_period,
)
from tickwheel.core.timer.jobs import (
    shared_walk as shared_walk,
)
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.services.timer.calendars import CALENDARS

# What one partition's next transaction carries (the core calls it PartitionWrites).
Emission = PartitionWrites


def entry_from_definition(record: dict[str, Any]) -> JobEntry:
    """A JobDefinition record as a JobEntry, compiled with the calendars this process knows."""
    return _jobs.entry_from_definition(record, CALENDARS.known)
