"""Re-exports `tickwheel.core.timer.execution_records` (decision 0090): the records the owner of an
execution writes about it besides its events: the dead letter of an execution that gave up, and
the `fenced` record of a write it refused."""

from tickwheel.core.timer.execution_records import execution_dead_letter as execution_dead_letter
from tickwheel.core.timer.execution_records import fenced_event as fenced_event
