"""Re-exports `tickwheel.core.timer.executions` (decision 0090): what the owner of an execution
decides about it, without I/O: leases and their deadlines, fencing of stale attempts, retries
with backoff, dead letters, and the counts that overlap policy and tenant caps need."""

from tickwheel.core.retry import ErrorKind as ErrorKind
from tickwheel.core.retry import RetryPolicy as RetryPolicy
from tickwheel.core.retry import decide_retry as decide_retry
from tickwheel.core.timer.execution_records import execution_dead_letter as execution_dead_letter
from tickwheel.core.timer.execution_records import fenced_event as fenced_event
from tickwheel.core.timer.executions import DISPATCH_RESTORE_GRACE_MS as DISPATCH_RESTORE_GRACE_MS
from tickwheel.core.timer.executions import DISPATCH_TIMEOUT_MS as DISPATCH_TIMEOUT_MS
from tickwheel.core.timer.executions import IN_FLIGHT_BYTES_PER_JOB as IN_FLIGHT_BYTES_PER_JOB
from tickwheel.core.timer.executions import LEASE_GRACE_MS as LEASE_GRACE_MS
from tickwheel.core.timer.executions import MAX_LEASE_MS as MAX_LEASE_MS
from tickwheel.core.timer.executions import MAX_UNHANDLED as MAX_UNHANDLED
from tickwheel.core.timer.executions import NO_HANDLER as NO_HANDLER
from tickwheel.core.timer.executions import OUTCOMES as OUTCOMES
from tickwheel.core.timer.executions import PENDING_OVERHEAD_BYTES as PENDING_OVERHEAD_BYTES
from tickwheel.core.timer.executions import QUEUED_DATA as QUEUED_DATA
from tickwheel.core.timer.executions import UNHANDLED_RETRY_MS as UNHANDLED_RETRY_MS
from tickwheel.core.timer.executions import ExecutionTracker as ExecutionTracker
from tickwheel.core.timer.executions import footprint as footprint
from tickwheel.core.timer.flights import Decision as Decision
from tickwheel.core.timer.flights import InFlight as InFlight
from tickwheel.core.timer.step_flights import StepFlights as StepFlights
from tickwheel.core.timer.workflow_steps import is_step as is_step
from tickwheel.core.timer.workflow_steps import step_outcome as step_outcome
from tickwheel.events import execution_event as execution_event
