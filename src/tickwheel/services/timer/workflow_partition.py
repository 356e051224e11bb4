"""Re-exports `tickwheel.core.timer.workflow_commands` (decision 0090): what a workflow
command does to one partition, and its workflow timers coming due."""

from tickwheel.core.timer.workflow_commands import (
    cancel_control as cancel_control,
)
from tickwheel.core.timer.workflow_commands import (
    fire_workflow_timers as fire_workflow_timers,
)
from tickwheel.core.timer.workflow_commands import (
    workflow_command as workflow_command,
)
