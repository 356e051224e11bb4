"""The service's side of one partition's scheduler (decision 0090): the decisions are
`tickwheel.core.timer.partition.PartitionScheduler`'s; `PartitionTimer` gives it this
process's holiday calendars and logs each failure it contained."""

from __future__ import annotations

import logging
from typing import Any

from tickwheel.core.timer.partition import PartitionScheduler
from tickwheel.services.timer.calendars import CALENDARS

log = logging.getLogger("tickwheel.timer")


def log_failure(action: str, message: str, fields: dict[str, Any]) -> None:
    """A failure the scheduler contained, as the timer's structured log line."""
    log.error(message, extra={"action": action, **fields})


class PartitionTimer(PartitionScheduler):
    """A partition's scheduler in this process: the calendars it knows, its log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("calendars", lambda: CALENDARS.known)
        kwargs.setdefault("report", log_failure)
        super().__init__(*args, **kwargs)
