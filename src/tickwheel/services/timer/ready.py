"""Re-exports `tickwheel.core.timer.ready` (decision 0090): due occurrences waiting to be fired:
per tenant, served round-robin, and bounded per job."""

from tickwheel.core.timer.ready import ReadyQueue as ReadyQueue
from tickwheel.core.timer.ready import backlog_bound as backlog_bound
