"""`python -m tickwheel.services.timer`: one timer process (its instance name from
`--instance` or TICKWHEEL_INSTANCE), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import gc
import logging
import os

from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import serve
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings

log = logging.getLogger("tickwheel.timer")


def main(argv: list[str] | None = None) -> None:
    from tickwheel.services.environment import service_parser

    parser = service_parser("tickwheel.services.timer")
    parser.add_argument("--instance", default=os.environ.get("TICKWHEEL_INSTANCE", "timer"))
    args = parser.parse_args(argv)
    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))
    # A burst allocates a few dicts per occurrence, nearly all acyclic: young collections every
    # 700 allocations (the default) cost a 300,000-job burst a seventh of its speed.
    gc.set_threshold(100_000, 50, 100)
    serve(
        log,
        "timer",
        lambda deadline: TimerService(TimerSettings(instance=args.instance), deadline=deadline),
    )


if __name__ == "__main__":
    main()
