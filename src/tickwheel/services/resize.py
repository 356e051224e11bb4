"""`tickwheel topology resize`: the `jobs` co-partition group grown from n to N partitions,
every record moved to the partition that owns it under N (decision 0211).

Growing a co-partitioned, compacted topic moves keys: a job whose key hashed to partition 2 of
6 may hash to 8 of 12, while its definition and its timer state stay on 2, where no owner of
partition 8 reads them. So the resize, with the partitioned services (timer, orchestrator, job
writer) stopped:

1. records `resizing n -> N` in `topology.changes` (no service starts until it is done);
2. adds the partitions to every topic of the group;
3. per old partition, in one transaction under that partition's timer transactional id (which
   fences any timer still holding it): moves each definition (its whole history on the
   partition, in order), each timer state (as the timer's own restore reads it, requests not
   yet covered replayed into it; a workflow's step key renamed to its key under N) and each
   workflow snapshot to its owner, with a tombstone left behind; and rewrites the
   partition's checkpoint with every state saved;
4. gives each new partition a timer checkpoint at offset 0, so that what is forwarded to it
   before its first owner starts is read, not skipped;
5. records `done N`: services start and take N from it.

Each step can be repeated: a resize killed anywhere is finished by running it again. Records
that reach an old partition after it (a producer with metadata from before the resize, an
input written before it and not consumed yet) are forwarded to their owner by the service that
reads them, in the transaction that consumes them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from tickwheel.adapters.kafka.admin import add_partitions, observe
from tickwheel.adapters.kafka.cluster_roles import group_members
from tickwheel.adapters.kafka.placement import canonical_key, is_partition_record, owner_partition
from tickwheel.adapters.kafka.producer import TransactionalProducer
from tickwheel.adapters.kafka.reader import Record, read_to_end
from tickwheel.adapters.kafka.topology_changes import read_changes, record_change
from tickwheel.errors import InvalidInput
from tickwheel.records import TopologyChange
from tickwheel.services.environment import from_env
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.services.orchestrator.settings import OrchestratorSettings
from tickwheel.services.timer import handover
from tickwheel.services.timer.records import checkpoint_key, encode_checkpoint
from tickwheel.services.timer.restore import Rebuilt, transactional_id
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.topology import JOBS_GROUP, TopicSpec, load_topology, topic_name

log = logging.getLogger("tickwheel.resize")

# A stopped static member stays in its group until its session times out (10 s).
GROUPS_EMPTY_WITHIN_S = 30.0
PARTITIONS_SEEN_WITHIN_S = 30.0
# A partition's moves are one transaction: a large partition's may take minutes to write.
MOVE_TRANSACTION_TIMEOUT_MS = 600_000


def owner_groups() -> list[str]:
    """The groups whose members own partitions of the group's state, as each service names
    its own (`TICKWHEEL_*_GROUP`); none may run during a resize."""
    return [
        from_env(TimerSettings).group_id,
        from_env(OrchestratorSettings).group_id,
        from_env(JobWriterSettings).group_id,
    ]


@dataclass
class ResizeReport:
    """What a resize did (or found done): the counts, and how many records it moved."""

    old: int
    new: int
    moved: int
    already_done: bool = False


class Resize:
    def __init__(
        self,
        bootstrap: str,
        partitions: int,
        *,
        now_ms: Callable[[], int],
        say: Callable[[str], None] = print,
        groups_empty_within_s: float = GROUPS_EMPTY_WITHIN_S,
    ) -> None:
        self.bootstrap = bootstrap
        self.new = partitions
        self.now_ms = now_ms
        self.say = say
        self.groups_empty_within_s = groups_empty_within_s
        self.specs = [s for s in load_topology() if s.co_partition == JOBS_GROUP]
        by_name = {s.name: s for s in self.specs}
        self.definitions = by_name[topic_name("jobs.definitions")]
        self.timer_states = by_name[topic_name("timers.state")]
        self.snapshots = by_name[topic_name("workflows.state")]
        self.moved = 0

    # -- the whole --------------------------------------------------------------------------
    def run(self) -> ResizeReport:
        change = read_changes(self.bootstrap).get(JOBS_GROUP)
        counts = {
            s.name: seen.partitions
            for s in self.specs
            if (seen := observe([s], self.bootstrap).get(s.name))
        }
        missing = [s.name for s in self.specs if s.name not in counts]
        if missing:
            raise InvalidInput(
                "topology",
                f"topics missing: {', '.join(missing)}; run `tickwheel topology apply` first",
            )
        if change is not None and change["state"] == "resizing":
            if change["to_partitions"] != self.new:
                raise InvalidInput(
                    "--partitions",
                    f"a resize to {change['to_partitions']} is "
                    f"under way; finish it first with --partitions "
                    f"{change['to_partitions']}",
                )
            old = change["from_partitions"]
            self.say(f"resuming the resize of group {JOBS_GROUP!r} from {old} to {self.new}")
            self._require_owners_stopped()
        else:
            old = min(counts.values())
            if len(set(counts.values())) > 1:
                raise InvalidInput(
                    "topology",
                    "the jobs group is not co-partitioned and no "
                    f"resize is recorded: {sorted(counts.items())}",
                )
            if self.new == old:
                self.say(f"group {JOBS_GROUP!r} has {old} partitions already: nothing to do")
                return ResizeReport(old, old, 0, already_done=True)
            if self.new < old:
                raise InvalidInput(
                    "--partitions",
                    f"{self.new} is fewer than the {old} the "
                    "group has; accepted: more (Kafka cannot remove partitions)",
                )
            self._require_owners_stopped()
            change = self._record(old, "resizing", self.now_ms())
            self.say(f"resizing group {JOBS_GROUP!r} from {old} to {self.new} partitions")
        started = change["started_at"]
        self._add_partitions(counts)
        for partition in range(old):
            self._move_partition(partition, old)
        self._checkpoint_new_partitions(old)
        self._record(old, "done", started)
        self.say(
            f"done: group {JOBS_GROUP!r} has {self.new} partitions; {self.moved} records "
            "moved. Start the timer, orchestrator and job writer again."
        )
        return ResizeReport(old, self.new, self.moved)

    def _record(self, old: int, state: str, started_at: int) -> TopologyChange:
        change: TopologyChange = {
            "group": JOBS_GROUP,
            "state": state,  # type: ignore[typeddict-item]
            "from_partitions": old,
            "to_partitions": self.new,
            "started_at": started_at,
            "updated_at": self.now_ms(),
            "moved": self.moved,
        }
        record_change(change, self.bootstrap)
        return change

    def _require_owners_stopped(self) -> None:
        """Every owner of the group's state stopped: a timer serving partition 2 while its
        jobs move would fire them twice."""
        deadline = time.monotonic() + self.groups_empty_within_s
        while True:
            running = {g: m for g in owner_groups() if (m := group_members(g, self.bootstrap))}
            if not running:
                return
            if time.monotonic() >= deadline:
                listing = "; ".join(f"{g}: {', '.join(m)}" for g, m in sorted(running.items()))
                raise InvalidInput(
                    "--partitions",
                    f"stop the timer, orchestrator and job writer first; still running: {listing}",
                )
            time.sleep(1.0)

    def _add_partitions(self, counts: dict[str, int]) -> None:
        short = [s.name for s in self.specs if counts[s.name] < self.new]
        if short:
            add_partitions(short, self.new, self.bootstrap)
            for name in short:
                self.say(f"  {name}: {counts[name]} -> {self.new} partitions")
        deadline = time.monotonic() + PARTITIONS_SEEN_WITHIN_S
        while True:
            seen = observe(self.specs, self.bootstrap)
            if all(seen[s.name].partitions == self.new for s in self.specs if s.name in seen):
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the cluster does not show {self.new} partitions yet")
            time.sleep(0.5)

    # -- one partition ----------------------------------------------------------------------
    def _move_partition(self, partition: int, old: int) -> None:
        """Everything partition `partition` holds that another partition owns under the new
        count, moved there in one transaction with the partition's new checkpoint."""
        # Fence the partition's orchestrator too: its transactions write snapshots here.
        fence = TransactionalProducer(
            f"{topic_name('tickwheel-orchestrator')}-p{partition}", self.bootstrap
        )
        fence.init()
        producer = TransactionalProducer(
            transactional_id(partition),
            self.bootstrap,
            **{"transaction.timeout.ms": MOVE_TRANSACTION_TIMEOUT_MS},
        )
        producer.init()  # fences the timer of the partition; its open transaction is aborted
        rebuilt = handover.read_partition(partition, old, self.bootstrap, self.now_ms)
        producer.begin()
        moved = self._move_definitions(producer, partition)
        moved += self._move_timer_states(producer, partition, rebuilt)
        moved += self._move_latest(producer, self.snapshots, partition)
        producer.commit()
        self.moved += moved
        self.say(f"  partition {partition}: {moved} records moved")

    def _move_definitions(self, producer: TransactionalProducer, partition: int) -> int:
        """A definition's whole history on the partition, in order: the timer and the job
        writer read pauses and resumes from it, not only the latest version."""
        history: dict[str, list[Record]] = {}
        for record in read_to_end(self.definitions.name, [partition], self.bootstrap):
            if record.key is not None and record.key_is_text:
                history.setdefault(record.key, []).append(record)
        moved = 0
        for key, records in history.items():
            owner = owner_partition(key, self.new)
            if owner == partition or records[-1].value is None:
                continue
            for record in records:
                producer.send(self.definitions.name, key, record.value, owner)
            producer.send(self.definitions.name, key, None, partition)
            moved += 1
        return moved

    def _move_timer_states(
        self, producer: TransactionalProducer, partition: int, rebuilt: Rebuilt
    ) -> int:
        topic = self.timer_states.name
        seq = rebuilt.request_log.seq
        unsaved = set(rebuilt.request_log.unsaved)
        moved = 0
        for key, state in rebuilt.timer.restoring.states.items():
            owner, renamed = owner_partition(key, self.new), canonical_key(key, self.new)
            if (owner, renamed) != (partition, key):
                producer.send(topic, renamed, handover.renamed_state(state, renamed, seq), owner)
                producer.send(topic, key, None, partition)
                moved += 1
            elif key in unsaved:
                producer.send(topic, key, handover.renamed_state(state, key, seq), partition)
        # Every state is saved now: the checkpoint keeps the inputs' offsets, and no request
        # mark (a restore has nothing to replay).
        inputs = {
            t: o
            for t, o in rebuilt.input_offsets.items()
            if t in (topic_name("timers.commands"), topic_name("executions.events"))
        }
        checkpoint = encode_checkpoint(partition, inputs, seq, self.now_ms())
        producer.send(topic, checkpoint_key(partition), checkpoint, partition)
        return moved

    def _move_latest(self, producer: TransactionalProducer, spec: TopicSpec, partition: int) -> int:
        latest: dict[str, bytes | None] = {}
        for record in read_to_end(spec.name, [partition], self.bootstrap):
            if record.key is not None and record.key_is_text:
                latest[record.key] = record.value
        moved = 0
        for key, value in latest.items():
            if value is None or is_partition_record(key):
                continue
            owner = owner_partition(key, self.new)
            if owner != partition:
                producer.send(spec.name, key, value, owner)
                producer.send(spec.name, key, None, partition)
                moved += 1
        return moved

    def _checkpoint_new_partitions(self, old: int) -> None:
        """A first owner of a partition with no checkpoint starts reading its worker events at
        their end; a new partition's may hold forwarded ones already: read from 0."""
        topic = self.timer_states.name
        inputs = {topic_name("timers.commands"): 0, topic_name("executions.events"): 0}
        for partition in range(old, self.new):
            producer = TransactionalProducer(transactional_id(partition), self.bootstrap)
            producer.init()
            existing = [
                r
                for r in read_to_end(topic, [partition], self.bootstrap)
                if r.key == checkpoint_key(partition)
            ]
            if existing:
                continue  # written by a run before this one
            producer.begin()
            producer.send(
                topic,
                checkpoint_key(partition),
                encode_checkpoint(partition, inputs, 0, self.now_ms()),
                partition,
            )
            producer.commit()
