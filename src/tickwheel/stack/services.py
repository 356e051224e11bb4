"""What the local stack runs: the options of `tickwheel stack up` and the service processes
they make (`python -m tickwheel.services.<name> --instance <name>`)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field

# A service's stop is bounded by its handler grace (the worker's 20 s) plus Kafka's share
# (10 s, decision 0050); one still running past this is killed, never left behind.
STOP_SERVICES_S = 35.0
STOP_BROKER_S = 30.0


@dataclass
class ProcessSpec:
    name: str
    role: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ProcessStatus:
    name: str
    role: str
    pid: int | None
    state: str  # starting | running | restarting | stopped | failed
    restarts: int = 0
    started_at: float | None = None
    log: str = ""


@dataclass
class StackOptions:
    timers: int = 1
    workers: int = 1
    history: bool = True
    watchdog: bool = True
    orchestrator: bool = True
    api: bool = True
    jobwriter: bool = True
    api_port: int = 8780
    kafka_port: int = 9092
    controller_port: int = 9093
    # Kafka nodes, each broker and controller; more than one is a replicated cluster on the
    # ports from kafka_port up (clients), then the controllers' (tickwheel.stack.cluster).
    brokers: int = 1


def service_specs(options: StackOptions, bootstrap: str) -> list[ProcessSpec]:
    """The tickwheel services the stack runs. Each service is `python -m services.<name>`-style
    entry point of the `tickwheel` package; the list grows as services land."""
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "TICKWHEEL_API_PORT": str(options.api_port)}
    specs: list[ProcessSpec] = []
    for module, role, count in _service_modules(options):
        for index in range(count):
            name = f"{role}-{index + 1}" if count > 1 else role
            specs.append(
                ProcessSpec(
                    name=name,
                    role=role,
                    command=[sys.executable, "-m", module, "--instance", name],
                    env=env,
                )
            )
    return specs


def _service_modules(options: StackOptions) -> list[tuple[str, str, int]]:
    """(module, role, instances) for each service that exists today."""
    available: list[tuple[str, str, int]] = []
    candidates = [
        ("tickwheel.services.timer", "timer", options.timers),
        ("tickwheel.services.worker", "worker", options.workers),
        ("tickwheel.services.history", "history", 1 if options.history else 0),
        # One owner (decision 0056): a second would fence the first.
        ("tickwheel.services.watchdog", "watchdog", 1 if options.watchdog else 0),
        # One is enough locally; more share the partitions (each fences its predecessor).
        ("tickwheel.services.orchestrator", "orchestrator", 1 if options.orchestrator else 0),
        # The single writer of job definitions (decision 0099): the API's and the SDK's
        # creates, updates and deletes wait for its verdicts. One is enough locally; more
        # share the partitions of jobs.commands (each fences its predecessor).
        ("tickwheel.services.jobwriter", "jobwriter", 1 if options.jobwriter else 0),
        ("tickwheel.services.api", "api", 1 if options.api else 0),
    ]

    for module, role, count in candidates:
        if count > 0 and importlib.util.find_spec(module) is not None:
            available.append((module, role, count))
    return available
