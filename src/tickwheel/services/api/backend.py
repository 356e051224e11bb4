"""What the API's routes act through: the SDK's job client, the history, the broker.

The routes are thin over `tickwheel.sdk`; `Backend` gathers the few things they call so a
test can build the app against the real broker with its own topics (or a fake client).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tickwheel.clock import Clock, SystemClock
from tickwheel.history import ClosableHistoryReader
from tickwheel.services.api.job_clients import JobsLike

if TYPE_CHECKING:
    from tickwheel.core.calendars import BusinessCalendar
    from tickwheel.services.api.calendars import CalendarSource


def _open_history() -> ClosableHistoryReader:
    from tickwheel.history import open_history_reader

    # A request must not wait out a starting history service: 503 and Retry-After instead.
    return open_history_reader(wait_s=2.0)


@dataclass
class Backend:
    """`bootstrap` None reads KAFKA_BOOTSTRAP_SERVERS (else the local stack's broker)."""

    jobs: JobsLike
    bootstrap: str | None = None
    clock: Clock = field(default_factory=SystemClock)
    open_history: Callable[[], ClosableHistoryReader] = _open_history
    # The tenant a request acts for (set per request by routes_jobs.backend); None: unscoped.
    tenant_id: str | None = None
    # The holiday calendars jobs are compiled with (services/api/calendars.py): the cluster's
    # `calendars` topic unless given; made once, so a per-request copy shares it.
    calendars: CalendarSource | None = None

    def __post_init__(self) -> None:
        if self.calendars is None:
            from tickwheel.services.api.calendars import CalendarsView

            self.calendars = CalendarsView(self.bootstrap)

    def known_calendars(self) -> Mapping[str, BusinessCalendar]:
        """Every calendar on the cluster by name, as the timer follows them."""
        assert self.calendars is not None  # set in __post_init__
        return self.calendars.known()

    @classmethod
    def from_env(cls, bootstrap: str | None = None) -> Backend:
        """Over the cluster: reads answer from one followed catalogue once it has passed an
        end offset recent enough (this instance's writes at once, others' within the read
        window: decision 0139); each write checks against ends asked for it, waits for its
        own acknowledgement and is serialised per job (decisions 0100, 0101)."""
        from tickwheel.sdk.catalogue import DefinitionCatalogue
        from tickwheel.services.api.followed_jobs import FollowedJobs
        from tickwheel.services.api.writes import AckedJobsClient

        catalogue = DefinitionCatalogue(bootstrap, shared_ends=True)
        writer = AckedJobsClient(bootstrap, catalogue=catalogue)
        return cls(jobs=FollowedJobs(writer, catalogue), bootstrap=bootstrap)

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def broker_ready(self) -> bool:
        from tickwheel.adapters.kafka.admin import cluster_metadata_ok
        from tickwheel.adapters.kafka.config import bootstrap_servers

        return cluster_metadata_ok(self.bootstrap or bootstrap_servers(), timeout=2.0)

    def cancel(
        self, execution_id: str, *, job_id: str | None, reason: str | None
    ) -> dict[str, Any]:
        from tickwheel.sdk import cancel

        record: dict[str, Any] = dict(
            cancel(
                execution_id,
                job_id=job_id,
                reason=reason,
                bootstrap=self.bootstrap,
                clock=self.clock,
            )
        )
        return record
