"""Re-exports `tickwheel.core.timer.workflow_steps` (decision 0090): the timer's side of workflows,
pure: what a workflow command asks of a partition, the one-off timers it holds for workflows
(sleeps, step deadlines, approval timeouts, delayed attempts), and the inputs it owes the
orchestrator (docs/decisions/0061)."""

from tickwheel.core.timer.workflow_steps import START_PREFIX as START_PREFIX
from tickwheel.core.timer.workflow_steps import STEP_KEY_PREFIX as STEP_KEY_PREFIX
from tickwheel.core.timer.workflow_steps import TIMER_KIND as TIMER_KIND
from tickwheel.core.timer.workflow_steps import WORKFLOW_KINDS as WORKFLOW_KINDS
from tickwheel.core.timer.workflow_steps import OneOff as OneOff
from tickwheel.core.timer.workflow_steps import WorkflowTimers as WorkflowTimers
from tickwheel.core.timer.workflow_steps import _is_compensation as _is_compensation
from tickwheel.core.timer.workflow_steps import is_step as is_step
from tickwheel.core.timer.workflow_steps import is_workflow_command as is_workflow_command
from tickwheel.core.timer.workflow_steps import step_outcome as step_outcome
from tickwheel.core.timer.workflow_steps import step_request as step_request
from tickwheel.core.workflow.ids import step_execution_id as step_execution_id
from tickwheel.core.workflow.inputs import Input as Input
from tickwheel.core.workflow.inputs import StepCancelled as StepCancelled
from tickwheel.core.workflow.inputs import StepFailed as StepFailed
from tickwheel.core.workflow.inputs import StepSucceeded as StepSucceeded
from tickwheel.core.workflow.inputs import TimerFired as TimerFired
from tickwheel.core.workflow.wire import fired_input_id as fired_input_id
from tickwheel.core.workflow.wire import input_record as input_record
from tickwheel.core.workflow.wire import outcome_input_id as outcome_input_id
