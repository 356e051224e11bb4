"""Re-exports `tickwheel.core.timer.request_log` (decision 0090): a partition's request topics as
the write-ahead log of its timer state (decision 0008)."""

from tickwheel.core.timer.request_log import MAX_UNSAVED_AGE_MS as MAX_UNSAVED_AGE_MS
from tickwheel.core.timer.request_log import SEQ_HEADER as SEQ_HEADER
from tickwheel.core.timer.request_log import RequestLog as RequestLog
from tickwheel.core.timer.request_log import first_offset_recorder as first_offset_recorder
