"""Re-exports `tickwheel.core.timer.commands` (decision 0090): what a `TimerCommand` asks of a job,
checked before anything is emitted."""

from tickwheel.core.definition import MAX_BACKFILL as MAX_BACKFILL
from tickwheel.core.timer.commands import COMMAND_KINDS as COMMAND_KINDS
from tickwheel.core.timer.commands import RejectedCommand as RejectedCommand
from tickwheel.core.timer.commands import command_slots as command_slots
from tickwheel.core.timer.commands import job_command as job_command
from tickwheel.core.timer.jobs import JobEntry as JobEntry
from tickwheel.core.timer.occurrences import skipped_event as skipped_event
from tickwheel.core.timer.writes import PartitionWrites as PartitionWrites
from tickwheel.errors import TickwheelError as TickwheelError
