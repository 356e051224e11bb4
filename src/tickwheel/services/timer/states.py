"""Re-exports `tickwheel.core.timer.states` (decision 0090): timer states (the `TimerState` records
of `timers.state`): the ones a restore reads back, rebuilt where needed from the requests they
do not cover yet (decision 0008), and the ones a partition writes."""

from tickwheel.core.timer.executions import ExecutionTracker as ExecutionTracker
from tickwheel.core.timer.jobs import JobEntry as JobEntry
from tickwheel.core.timer.jobs import request_of_a_predecessor as request_of_a_predecessor
from tickwheel.core.timer.jobs import state_of_a_predecessor as state_of_a_predecessor
from tickwheel.core.timer.states import RestoringStates as RestoringStates
from tickwheel.core.timer.states import job_state as job_state
from tickwheel.core.timer.states import orphan_state as orphan_state
from tickwheel.core.timer.states import pending_entries as pending_entries
