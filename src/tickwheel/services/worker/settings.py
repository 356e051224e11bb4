"""The worker's settings, declared once: flags, each backed by a `TICKWHEEL_WORKER_*`
variable. Light on imports so `tickwheel --help` stays fast."""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import dataclass

from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.core.queues import DEFAULT_QUEUE, QUEUE_NAME
from tickwheel.errors import InvalidInput
from tickwheel.services.environment import (
    Seconds,
    Text,
    Using,
    Whole,
    add_flags,
    bootstrap_setting,
    from_args,
    instance_setting,
    log_level_setting,
    setting,
)
from tickwheel.topology import topic_name

PRIORITIES = ("high", "normal", "low")
DEFAULT_CONCURRENCY = 8
# A hung handler would otherwise hold its slot and lease for ever (heartbeats are
# automatic), so there is always a limit; an hour suits most batch work.
DEFAULT_MAX_RUN_SECONDS = 3600.0
# How soon a lane's consumer fetches again once its prefetch was full (decision 0146): well
# under the time one batch takes, so the prefetch never runs dry while requests wait in Kafka.
FETCH_QUEUE_BACKOFF_MS = 20
# Live code workflow runs kept per worker: each holds a suspended coroutine and its history's
# bookkeeping, a few KiB for a typical workflow; a run not kept is rebuilt by a full replay.
DEFAULT_WORKFLOW_CACHE = 10_000


def _split(values: list[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else values
    return tuple(part.strip() for item in items for part in item.split(",") if part.strip())


def parse_priorities(values: list[str] | str | None, name: str = "--priority") -> tuple[str, ...]:
    names = _split(values) or PRIORITIES
    unknown = [n for n in names if n not in PRIORITIES]
    if unknown:
        raise InvalidInput(name, f"{unknown[0]!r} is not one of {', '.join(PRIORITIES)}")
    return tuple(p for p in PRIORITIES if p in names)


def parse_concurrency(text: str | None, name: str = "--concurrency") -> dict[str, int]:
    """`8` (each priority's pool) or `high=4,normal=8,low=2` (unnamed ones keep the default)."""
    result = dict.fromkeys(PRIORITIES, DEFAULT_CONCURRENCY)
    if not text:
        return result
    try:
        if "=" not in text:
            result = dict.fromkeys(PRIORITIES, int(text))
        else:
            for part in _split(text):
                key, _, number = part.partition("=")
                if key.strip() not in PRIORITIES:
                    raise ValueError(key)
                result[key.strip()] = int(number)
    except ValueError:
        raise InvalidInput(
            name, f"{text!r}: a whole number, or e.g. high=4,normal=8,low=2"
        ) from None
    if any(n < 1 for n in result.values()):
        raise InvalidInput(name, "every pool needs at least 1 slot")
    return result


def _queue(name: str, text: str) -> str:
    if not QUEUE_NAME.fullmatch(text):
        raise InvalidInput(
            name, f"{text!r}; accepted: 1 to 64 of a-z 0-9 . _ -, starting alphanumeric"
        )
    return text


def _names(name: str, text: str) -> tuple[str, ...]:
    return _split(text)


def _shown(value: object) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)


@dataclass(frozen=True)
class WorkerSettings:
    """How one worker process runs, declared once (decision 0215): each field's variable, how
    it is read, its default and what it means; `from_env(WorkerSettings)` reads the
    environment, `add_worker_arguments` gives the flags."""

    instance: str = instance_setting("worker")
    bootstrap: str = bootstrap_setting()
    # The named task queue this worker serves (decision 0053): requests of other queues pass by.
    queue: str = setting(
        "TICKWHEEL_WORKER_QUEUE",
        Using(_queue),
        DEFAULT_QUEUE,
        "the named task queue to serve: jobs with that `queue` run only on its workers, one "
        "consumer group per queue",
    )
    group_id: str = setting(
        "TICKWHEEL_WORKER_GROUP",
        Text(),
        "",
        "the consumer group",
        flag="--group",
        shown="<prefix>tickwheel-workers, or <prefix>tickwheel-workers-<queue>",
    )  # "" (unset): one consumer group per queue, from `queue_group`
    priorities: tuple[str, ...] = setting(
        "TICKWHEEL_WORKER_PRIORITIES",
        Using(lambda n, t: parse_priorities(t, n), _shown),
        PRIORITIES,
        "priorities to consume, each with its own consumer and pool",
        flag="--priority",
        many=True,
    )
    # `setting` returns a dataclasses.field, its dict made afresh for each instance.
    concurrency: dict[str, int] = setting(  # noqa: RUF009
        "TICKWHEEL_WORKER_CONCURRENCY",
        Using(lambda n, t: parse_concurrency(t, n)),
        help="slots per priority pool: N, or high=4,normal=8,low=2",
        default_factory=lambda: parse_concurrency(None),
        shown=f"{DEFAULT_CONCURRENCY} each",
    )
    tenant_cap: int | None = setting(
        "TICKWHEEL_WORKER_TENANT_CAP",
        Whole(minimum=0, zero_is_none=True),
        None,
        "most executions of one tenant running at once per pool; 0 = the pool's size",
        shown="the pool's size",
    )
    prefetch: int | None = setting(
        "TICKWHEEL_WORKER_PREFETCH",
        Whole(minimum=0, zero_is_none=True),
        None,
        "waiting requests held beyond the pool; 0 = the pool's size",
        shown="the pool's size",
    )
    types: tuple[str, ...] | None = setting(
        "TICKWHEEL_WORKER_TYPES",
        Using(lambda n, t: _split(t) or None, _shown),
        None,
        "job types to handle, space or comma separated. Every worker of the group receives "
        "any type: a type this worker lacks is failed as retryable (reason no_handler), and "
        "dead-lettered once the job's attempts run out",
        many=True,
        shown="every built-in and every type from --module",
    )
    modules: tuple[str, ...] = setting(
        "TICKWHEEL_WORKER_MODULES",
        Using(_names, _shown),
        (),
        "Python modules to load: their @job handlers, and their @workflow functions and "
        "steps (job types workflow:<name> and code:<module:qualname>, decision 0217)",
        flag="--module",
        many=True,
        shown="none",
    )
    workflow_cache: int = setting(
        "TICKWHEEL_WORKER_WORKFLOW_CACHE",
        Whole(),
        DEFAULT_WORKFLOW_CACHE,
        "live code workflow runs kept in memory; a task for a run not kept is answered "
        "missed and the whole history is replayed",
    )
    shutdown_grace_s: float = setting(
        "TICKWHEEL_WORKER_SHUTDOWN_GRACE_S",
        Seconds(zero_ok=True),
        20.0,
        "seconds a stopping worker waits for running handlers; the leases of any still "
        "running then expire and the timer re-issues them",
        flag="--shutdown-grace",
    )
    cancel_lookback_s: float = setting(
        "TICKWHEEL_WORKER_CANCEL_LOOKBACK_S",
        Seconds(zero_ok=True),
        86400.0,
        "seconds of executions.control read at start-up; 0 reads from the end",
        flag="--cancel-lookback",
    )
    cancel_memory: int = 100_000
    commit_interval_s: float = 0.2
    max_run_seconds: float = setting(
        "TICKWHEEL_WORKER_MAX_RUN_SECONDS",
        Seconds(),
        DEFAULT_MAX_RUN_SECONDS,
        "longest an attempt may run when neither its job nor its type sets a limit; past it "
        "the attempt is failed as retryable and its slot freed",
    )  # when neither job nor type sets one
    log_level: str = log_level_setting()

    def __post_init__(self) -> None:
        if not self.group_id:
            object.__setattr__(self, "group_id", queue_group(self.queue))

    @property
    def worker_id(self) -> str:
        """Unique per process: names the lease holder in every event."""
        return f"{self.instance}@{socket.gethostname()}:{os.getpid()}"


def lane_consumer_config(settings: WorkerSettings, priority: str) -> dict[str, object]:
    """The consumer settings of one priority's lane."""
    return consumer_config(
        settings.group_id,
        settings.bootstrap,
        **{
            "client.id": f"{settings.worker_id}/{priority}",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            # Bounded prefetch: a flood waits in Kafka, not in this process.
            "queued.max.messages.kbytes": 4096,
            "queued.min.messages": 1000,
            # Once a partition's prefetch is over those bounds, librdkafka looks again after
            # this long (its default, 1 s, left a lane that drains a few thousand requests
            # in a fraction of a second with nothing to consume for the rest: decision 0146).
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            "enable.partition.eof": False,
        },
    )


def queue_group(queue: str) -> str:
    """The consumer group of a queue's workers: each request is taken by one worker of the
    queue it belongs to (the default queue keeps the group name workers always had)."""
    if queue == DEFAULT_QUEUE:
        return topic_name("tickwheel-workers")
    return topic_name(f"tickwheel-workers-{queue}")


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags shared by `tickwheel worker` and `python -m tickwheel.services.worker`."""
    add_flags(WorkerSettings, parser)


def settings_from_args(args: argparse.Namespace) -> WorkerSettings:
    """The settings from the environment, each overridden by its flag when it was given."""
    return from_args(WorkerSettings, args)
