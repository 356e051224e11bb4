"""Named task queues (decision 0053): a job's executions run only on the workers that serve
its queue, one consumer group per queue. A module of its own so that the worker's flags (read
by every `tickwheel` command) do not import the scheduling core."""

from __future__ import annotations

import re

DEFAULT_QUEUE = "default"
QUEUE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
