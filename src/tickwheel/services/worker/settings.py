"""The worker's settings: flags, each backed by a `TICKWHEEL_WORKER_*` variable. Light on
imports so `tickwheel --help` stays fast."""

from __future__ import annotations

import argparse
import math
import os
import socket
from dataclasses import dataclass, field

from tickwheel.adapters.kafka.config import bootstrap_servers, consumer_config
from tickwheel.core.queues import DEFAULT_QUEUE, QUEUE_NAME
from tickwheel.environment import env_int, env_seconds
from tickwheel.errors import InvalidInput
from tickwheel.topology import topic_name

PRIORITIES = ("high", "normal", "low")
DEFAULT_CONCURRENCY = 8
# A hung handler would otherwise hold its slot and lease for ever (heartbeats are
# automatic), so there is always a limit; an hour suits most batch work.
DEFAULT_MAX_RUN_SECONDS = 3600.0
# How soon a lane's consumer fetches again once its prefetch was full (decision 0146): well
# under the time one batch takes, so the prefetch never runs dry while requests wait in Kafka.
FETCH_QUEUE_BACKOFF_MS = 20


def _split(values: list[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else values
    return tuple(part.strip() for item in items for part in item.split(",") if part.strip())


def parse_priorities(values: list[str] | str | None) -> tuple[str, ...]:
    names = _split(values) or PRIORITIES
    unknown = [n for n in names if n not in PRIORITIES]
    if unknown:
        raise InvalidInput("--priority", f"{unknown[0]!r} is not one of {', '.join(PRIORITIES)}")
    return tuple(p for p in PRIORITIES if p in names)


def parse_concurrency(text: str | None) -> dict[str, int]:
    """`8` (each priority's pool) or `high=4,normal=8,low=2` (unnamed ones keep the default)."""
    result = dict.fromkeys(PRIORITIES, DEFAULT_CONCURRENCY)
    if not text:
        return result
    try:
        if "=" not in text:
            result = dict.fromkeys(PRIORITIES, int(text))
        else:
            for part in _split(text):
                name, _, number = part.partition("=")
                if name.strip() not in PRIORITIES:
                    raise ValueError(name)
                result[name.strip()] = int(number)
    except ValueError:
        raise InvalidInput(
            "--concurrency", f"{text!r}: a whole number, or e.g. high=4,normal=8,low=2"
        ) from None
    if any(n < 1 for n in result.values()):
        raise InvalidInput("--concurrency", "every pool needs at least 1 slot")
    return result


@dataclass
class WorkerSettings:
    """How one worker process runs. Environment: see `add_worker_arguments`."""

    instance: str = "worker"
    bootstrap: str = field(default_factory=bootstrap_servers)
    # The named task queue this worker serves (decision 0053): requests of other queues pass by.
    queue: str = DEFAULT_QUEUE
    group_id: str = ""  # "" (unset): one consumer group per queue, from `queue_group`
    priorities: tuple[str, ...] = PRIORITIES
    concurrency: dict[str, int] = field(default_factory=lambda: parse_concurrency(None))
    tenant_cap: int | None = None  # None: a tenant may use a whole pool
    prefetch: int | None = None  # waiting requests held beyond the pool; None: the pool's size
    types: tuple[str, ...] | None = None  # None: every registered type
    modules: tuple[str, ...] = ()
    shutdown_grace_s: float = 20.0
    cancel_lookback_s: float = 86400.0
    cancel_memory: int = 100_000
    commit_interval_s: float = 0.2
    max_run_seconds: float = DEFAULT_MAX_RUN_SECONDS  # when neither job nor type sets one

    def __post_init__(self) -> None:
        if not self.group_id:
            self.group_id = os.environ.get("TICKWHEEL_WORKER_GROUP") or queue_group(self.queue)

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
    env = os.environ.get
    parser.add_argument(
        "--instance",
        default=env("TICKWHEEL_INSTANCE", "worker"),
        help="instance name, used in the worker id (env: TICKWHEEL_INSTANCE)",
    )
    parser.add_argument(
        "--queue",
        default=env("TICKWHEEL_WORKER_QUEUE", DEFAULT_QUEUE),
        help="the named task queue to serve: jobs with that `queue` run only on its workers, "
        f"one consumer group per queue (default {DEFAULT_QUEUE!r}; env: TICKWHEEL_WORKER_QUEUE)",
    )
    parser.add_argument(
        "--types",
        nargs="+",
        default=env("TICKWHEEL_WORKER_TYPES"),
        help="job types to handle, space or comma separated (default: every built-in and every "
        "type from --module; env: TICKWHEEL_WORKER_TYPES). Every worker of the group receives "
        "any type: a type this worker lacks is failed as retryable (reason no_handler), and "
        "dead-lettered once the job's attempts run out",
    )
    parser.add_argument(
        "--concurrency",
        default=env("TICKWHEEL_WORKER_CONCURRENCY"),
        help=f"slots per priority pool: N, or high=4,normal=8,low=2 (default {DEFAULT_CONCURRENCY} "
        "each; env: TICKWHEEL_WORKER_CONCURRENCY)",
    )
    parser.add_argument(
        "--priority",
        nargs="+",
        default=env("TICKWHEEL_WORKER_PRIORITIES"),
        help="priorities to consume, each with its own consumer and pool (default: high normal "
        "low; env: TICKWHEEL_WORKER_PRIORITIES)",
    )
    parser.add_argument(
        "--module",
        nargs="+",
        action="extend",
        default=None,
        help="Python modules whose @job handlers to load (env: TICKWHEEL_WORKER_MODULES)",
    )
    parser.add_argument(
        "--tenant-cap",
        type=int,
        default=env_int("TICKWHEEL_WORKER_TENANT_CAP", 0, minimum=0) or None,
        help="most executions of one tenant running at once per pool (default: the pool's size; "
        "env: TICKWHEEL_WORKER_TENANT_CAP)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=env_seconds("TICKWHEEL_WORKER_SHUTDOWN_GRACE_S", 20.0, zero_ok=True),
        help="seconds a stopping worker waits for running handlers; the leases of any still "
        "running then expire and the timer re-issues them (env: TICKWHEEL_WORKER_SHUTDOWN_GRACE_S)",
    )
    parser.add_argument(
        "--max-run-seconds",
        type=float,
        default=env_seconds("TICKWHEEL_WORKER_MAX_RUN_SECONDS", DEFAULT_MAX_RUN_SECONDS),
        help="longest an attempt may run when neither its job nor its type sets a limit; past "
        "it the attempt is failed as retryable and its slot freed (default "
        f"{DEFAULT_MAX_RUN_SECONDS:.0f}; env: TICKWHEEL_WORKER_MAX_RUN_SECONDS)",
    )
    parser.add_argument(
        "--cancel-lookback",
        type=float,
        default=env_seconds("TICKWHEEL_WORKER_CANCEL_LOOKBACK_S", 86400.0, zero_ok=True),
        help="seconds of executions.control read at start-up; 0 reads from the end "
        "(env: TICKWHEEL_WORKER_CANCEL_LOOKBACK_S)",
    )


def settings_from_args(args: argparse.Namespace) -> WorkerSettings:
    modules = _split(args.module) or _split(os.environ.get("TICKWHEEL_WORKER_MODULES"))
    types = _split(args.types) or None
    if args.tenant_cap is not None and args.tenant_cap < 1:
        raise InvalidInput("--tenant-cap", "at least 1")
    if not 0 < args.max_run_seconds < math.inf:
        raise InvalidInput(
            "--max-run-seconds", f"{args.max_run_seconds} is not a number of seconds > 0"
        )
    if not isinstance(args.queue, str) or not QUEUE_NAME.fullmatch(args.queue):
        raise InvalidInput(
            "--queue", f"{args.queue!r}; accepted: 1 to 64 of a-z 0-9 . _ -, starting alphanumeric"
        )
    return WorkerSettings(
        instance=args.instance,
        queue=args.queue,
        priorities=parse_priorities(args.priority),
        concurrency=parse_concurrency(args.concurrency),
        tenant_cap=args.tenant_cap,
        types=types,
        modules=modules,
        shutdown_grace_s=args.shutdown_grace,
        cancel_lookback_s=args.cancel_lookback,
        max_run_seconds=args.max_run_seconds,
        prefetch=env_int("TICKWHEEL_WORKER_PREFETCH", 0, minimum=0) or None,
    )
