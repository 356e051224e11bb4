"""What the timer service holds for one partition it owns, and the topics it reads and writes."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.adapters.kafka.placement import Forward
from tickwheel.core.timer.partition import PartitionScheduler
from tickwheel.core.timer.request_log import RequestLog, bursting
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.ports.kafka import TransactionalWriter
from tickwheel.records import TimerCommand
from tickwheel.services.timer.records import RequestKey
from tickwheel.topology import topic_name

PRIORITIES = ("high", "normal", "low")


@dataclass(frozen=True)
class TimerTopics:
    """The timer's topics under the deployment's prefix (co-partitioned, keyed by job id)."""

    definitions: str = field(default_factory=lambda: topic_name("jobs.definitions"))
    state: str = field(default_factory=lambda: topic_name("timers.state"))
    commands: str = field(default_factory=lambda: topic_name("timers.commands"))
    events: str = field(default_factory=lambda: topic_name("executions.events"))
    dlq: str = field(default_factory=lambda: topic_name("executions.dlq"))
    control: str = field(default_factory=lambda: topic_name("executions.control"))
    # Where the accepted outcomes of workflow steps and fired workflow timers go.
    workflow_inputs: str = field(default_factory=lambda: topic_name("workflows.inputs"))
    requests: dict[str, str] = field(
        default_factory=lambda: {p: topic_name(f"executions.{p}") for p in PRIORITIES}
    )


@dataclass
class HeldCommand:
    """A command waiting for its job's definition; `definitions_end` is where the definitions
    partition ended when it came: read that far, an unknown job is really unknown."""

    offset: int
    key: str | None
    raw: bytes
    command: TimerCommand
    definitions_end: int
    give_up_at: float
    # Set for a command this partition does not own (decision 0211): when its turn comes it
    # is forwarded to that partition, not applied.
    forward_to: int | None = None


class PartitionRuntime:
    """One owned partition: its scheduler, its transactional producer, where its inputs stand."""

    def __init__(
        self,
        partition: int,
        timer: PartitionScheduler,
        producer: TransactionalWriter[TopicPartition],
        definitions_end: int,
        log: RequestLog,
    ) -> None:
        self.partition = partition
        self.log = log  # jobs that fired without their state, and where their requests are
        # Per job, requests encoded but not yet written into its state: the state reuses the
        # bytes, and any state of the job (it covers all its requests) drops them.
        self.encoded_requests: dict[str, dict[RequestKey, bytes]] = {}
        self.timer = timer
        self.producer = producer
        self.definitions_end = definitions_end  # where the restore stopped reading definitions
        self.command_offset: int | None = None  # next offset to read of timers.commands
        self.events_offset: int | None = None  # next offset to read of executions.events
        self.inputs_moved = False  # the checkpoint must be written in the next transaction
        # From definition changes and commands since the tick.
        self.pending_emission = PartitionWrites()
        # What the restore decided must be written before anything else (catch-up, skips,
        # dead letters), in chunks: written when the partition is served, then let go.
        self.catch_up = PartitionWrites()
        # Commands waiting (in order) for a definition; the checkpoint stays at the first, so a
        # crash meanwhile reads them again and nothing is lost or applied twice.
        self.held_commands: deque[HeldCommand] = deque()
        # Inputs owned by another partition, for the next transaction to send on.
        self.forwards: list[Forward] = []
        # Whether this partition's last tick was a burst's: while one partition of the instance
        # bursts, the others' quiet ticks hold their states back (decision 0184).
        self.bursting = False

    def add_states(
        self,
        emission: PartitionWrites,
        *,
        max_batch: int,
        lag_ms: int,
        now_ms: int,
        burst_elsewhere: bool,
    ) -> None:
        """After the tick that made `emission`: the unsaved states its transaction writes
        (`RequestLog.states_due`), and the states it already carries as they stand now. A
        burst is under way while another partition bursts (`burst_elsewhere`) or this one did
        at its previous tick: the tick that fires a partition's tail of the burst, quiet as it
        may be, is still the burst's."""
        fired, backlog = len(emission.requests), self.timer.backlog
        under_way = burst_elsewhere or self.bursting
        self.bursting = bursting(fired=fired, backlog=backlog, max_batch=max_batch)
        due = self.log.states_due(
            fired=fired,
            backlog=backlog,
            max_batch=max_batch,
            lag_ms=lag_ms,
            now_ms=now_ms,
            burst_under_way=under_way,
        )
        if due:
            emission.extend(self.timer.snapshot(due, now_ms))
        self.timer.refresh_fired_states(emission, now_ms)


def burst_elsewhere(partitions: Iterable[PartitionRuntime], runtime: PartitionRuntime) -> bool:
    """Whether a partition other than `runtime`'s was bursting at its last tick."""
    return any(other.bursting for other in partitions if other is not runtime)
