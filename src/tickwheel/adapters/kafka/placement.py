"""Which partition of the `jobs` co-partition group owns a key, for any partition count.

A job's key hashes to its partition (murmur2, as every producer places it). A workflow's step
key `__wf/<workflow_id>/<n>` is chosen so that it hashes to its workflow's partition, so the
timer that runs the step and the orchestrator that folds the workflow meet on one partition
(decision 0061). The suffix `n` only places the key: after the partition count grows
(decision 0211), a step key written under the old count still names its workflow, and its
owner is its workflow's partition, not its own hash. `canonical_key` is the key the same
workflow uses under the new count.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from tickwheel.adapters.kafka.partitioner import partition_for

STEP_KEY_PREFIX = "__wf/"
# A partition's own record in a changelog (`__partition__/<N>`: a checkpoint). It stays on the
# partition it describes, whatever its key hashes to.
PARTITION_KEY_PREFIX = "__partition__/"
# A step key is searched among this many suffixes for one on the workflow's own partition;
# with n partitions one in n fits, so running out is a chance of (1 - 1/n)^1000.
MAX_KEY_SUFFIX = 1000


@lru_cache(maxsize=65_536)
def step_key(workflow_id: str, partitions: int) -> str:
    """The `job_id` (and key) of a workflow's step executions and timer commands: reserved
    (`__wf/`, no job can have it) and hashing to the workflow's own partition."""
    want = partition_for(workflow_id, partitions)
    for n in range(MAX_KEY_SUFFIX):
        key = f"{STEP_KEY_PREFIX}{workflow_id}/{n}"
        if partition_for(key, partitions) == want:
            return key
    raise ValueError(f"no step key of {workflow_id!r} lands on partition {want}")


def step_workflow(key: str | None) -> str | None:
    """The workflow a step key belongs to; None for any other key."""
    if not key or not key.startswith(STEP_KEY_PREFIX):
        return None
    return key[len(STEP_KEY_PREFIX) :].rpartition("/")[0] or None


def is_partition_record(key: str | None) -> bool:
    return key is not None and key.startswith(PARTITION_KEY_PREFIX)


@lru_cache(maxsize=1 << 18)  # on every input after a resize: a job's key recurs
def owner_partition(key: str, partitions: int) -> int:
    """The partition that owns `key` among `partitions`: a step key's workflow's, else the
    key's own."""
    workflow = step_workflow(key)
    return partition_for(key if workflow is None else workflow, partitions)


def canonical_key(key: str, partitions: int) -> str:
    """`key` as it is written under `partitions`: a step key placed by an older count becomes
    its workflow's step key now; every other key is itself."""
    workflow = step_workflow(key)
    return key if workflow is None else step_key(workflow, partitions)


def foreign_owner(key: str | None, partition: int, partitions: int) -> int | None:
    """The partition that owns an input read from `partition` when it is another one: the
    record is to be forwarded there (decision 0211). None when `partition` owns it, and for a
    record with nothing to place it by (no key, a partition's own record), and for a partition
    past `partitions`: the reader's count is older than the topic's (not adopted yet), and
    forwarding by it would send records back where an up-to-date reader sent them from."""
    if key is None or is_partition_record(key) or partition >= partitions:
        return None
    owner = owner_partition(key, partitions)
    return None if owner == partition else owner


@dataclass(frozen=True, slots=True)
class Forward:
    """An input found on a partition that does not own its key (written before a resize, or
    by a producer that has not seen it yet), to send on unchanged to its owner in the
    transaction that moves the reader past it (decision 0211)."""

    topic: str
    key: str | None
    value: bytes | None
    partition: int  # the owner, among the current partition count
    offset: int  # where it was read
    headers: tuple[tuple[str, bytes], ...] = ()


# Keys named in a forwarding log line, so that one can be followed to its owner.
LOGGED_KEYS = 20


def log_forwards(log: logging.Logger, partition: int, forwards: Sequence[Forward]) -> None:
    """One line for the forwards of a committed transaction of `partition`."""
    if not forwards:
        return
    to = Counter(forward.partition for forward in forwards)
    log.info(
        "inputs forwarded to the partitions that own them",
        extra={
            "action": "input_forwarded",
            "partition": partition,
            "topic": forwards[0].topic,
            "count": len(forwards),
            "to_partitions": dict(sorted(to.items())),
            "offsets": [forwards[0].offset, forwards[-1].offset],
            "keys": [forward.key for forward in forwards[:LOGGED_KEYS]],
        },
    )
