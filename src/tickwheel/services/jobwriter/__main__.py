"""`python -m tickwheel.services.jobwriter`: one job writer process (its instance name from
`--instance` or TICKWHEEL_INSTANCE), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import logging
import os

from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import ShutdownDeadline, serve
from tickwheel.services.environment import service_parser
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings

log = logging.getLogger("tickwheel.jobwriter")


def main(argv: list[str] | None = None) -> None:
    parser = service_parser("tickwheel.services.jobwriter")
    parser.add_argument(
        "--instance",
        default=os.environ.get("TICKWHEEL_INSTANCE", "jobwriter"),
        help="this instance's name in the group (env TICKWHEEL_INSTANCE)",
    )
    args = parser.parse_args(argv)
    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))

    def build(deadline: ShutdownDeadline) -> JobWriterService:
        settings = JobWriterSettings(instance=args.instance)
        return JobWriterService(settings, BrokerClients(settings.bootstrap), deadline=deadline)

    serve(log, "jobwriter", build)


if __name__ == "__main__":
    main()
