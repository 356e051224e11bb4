"""Re-exports `tickwheel.core.timer.flights` (decision 0090): an execution in flight, and what one
decision about executions asks for (the `ExecutionTracker`'s vocabulary; `executions.py` re-
exports both)."""

from tickwheel.core.timer.flights import Decision as Decision
from tickwheel.core.timer.flights import InFlight as InFlight
from tickwheel.core.timer.flights import __all__ as __all__
from tickwheel.core.timer.flights import empty_decision as empty_decision
