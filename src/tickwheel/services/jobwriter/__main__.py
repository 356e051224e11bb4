"""`python -m tickwheel.services.jobwriter`: one job writer process, its settings from its flags
and the environment (`--help` lists them), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import logging

from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import ShutdownDeadline, serve
from tickwheel.services.environment import load, log_level
from tickwheel.services.jobwriter.service import JobWriterService
from tickwheel.services.jobwriter.settings import JobWriterSettings

log = logging.getLogger("tickwheel.jobwriter")


def main(argv: list[str] | None = None) -> None:
    settings = load(JobWriterSettings, "jobwriter", argv, description="The tickwheel job writer.")
    configure_logging(log_level(settings.log_level))

    def build(deadline: ShutdownDeadline) -> JobWriterService:
        return JobWriterService(settings, BrokerClients(settings.bootstrap), deadline=deadline)

    serve(log, "jobwriter", build)


if __name__ == "__main__":
    main()
