"""Re-exports `tickwheel.core.timer.step_flights` (decision 0090): what the owner of a workflow
step's execution decides beyond a job's (decision 0061): an attempt is over when it fails,
whatever the error (the fold numbers and retries attempts), and its one accepted outcome is owed
to the workflow."""

from tickwheel.core.timer.flights import Decision as Decision
from tickwheel.core.timer.flights import InFlight as InFlight
from tickwheel.core.timer.step_flights import StepFlights as StepFlights
from tickwheel.core.timer.workflow_steps import step_outcome as step_outcome
