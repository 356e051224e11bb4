"""Re-exports `tickwheel.core.timer.occurrences` (decision 0090): the records one occurrence
produces: the request that runs it, or the event that says it was skipped."""

from tickwheel.core.identity import execution_id as execution_id
from tickwheel.core.period import render_payload_template as render_payload_template
from tickwheel.core.timer.jobs import JobEntry as JobEntry
from tickwheel.core.timer.jobs import shared_next_after as shared_next_after
from tickwheel.core.timer.jobs import shared_period as shared_period
from tickwheel.core.timer.occurrences import LATE_AFTER_MS as LATE_AFTER_MS
from tickwheel.core.timer.occurrences import job_dead_letter as job_dead_letter
from tickwheel.core.timer.occurrences import request_record as request_record
from tickwheel.core.timer.occurrences import skipped_event as skipped_event
