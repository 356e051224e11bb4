"""What every broker-backed benchmark shares: a throwaway local broker, percentiles, and a
report that prints each figure as it comes and lands in bench/reports/."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from tickwheel.stack.broker import BrokerConfig, LocalKafka, min_insync_for
from tickwheel.stack.cluster import LocalCluster

REPLICATION_VAR = "TICKWHEEL_REPLICATION_FACTOR"
MIN_INSYNC_VAR = "TICKWHEEL_MIN_INSYNC_REPLICAS"

REPORTS = Path(__file__).resolve().parent / "reports"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# A service's stop is bounded (the worker's handler grace plus Kafka's share, decision 0050);
# past this a benchmark kills it rather than move on and leave it running.
STOP_GRACE_S = 35.0
_children: list[subprocess.Popen[bytes]] = []


def track(process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """Register a service process the benchmark started: it is stopped and waited for when
    the benchmark ends, however it ends (an exception, Ctrl-C, SIGTERM)."""
    _children.append(process)
    return process


def stop_process(process: subprocess.Popen[bytes], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM, then SIGKILL past `grace`; either way waited for, never left behind."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            print(f"pid {process.pid} ignored SIGTERM for {grace:g} s; killing it", flush=True)
            process.kill()
            process.wait(10)


def stop_all() -> None:
    """Stop every tracked process still running: SIGTERM to all at once, then one bound."""
    for process in _children:
        if process.poll() is None:
            process.terminate()
    for process in _children:
        stop_process(process)
    _children.clear()


def _exit(signum: int, _frame: object) -> None:
    sys.exit(128 + signum)


def exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit, which unwinds the benchmark's `finally` blocks (and so stops
    its services and broker); the default action would leave them running."""
    signal.signal(signal.SIGTERM, _exit)


atexit.register(stop_all)


@contextmanager
def bench_broker(data_dir: Path | None = None) -> Iterator[LocalKafka]:
    """A real local Kafka broker on free loopback ports, stopped afterwards (after every
    tracked service process, so they stop while their broker still answers)."""
    directory = data_dir or Path(tempfile.mkdtemp(prefix="tickwheel-bench-kafka-"))
    broker = LocalKafka(BrokerConfig.on_free_ports(directory, heap="1g"))
    with _running(broker, copies=1):
        yield broker


@contextmanager
def bench_cluster(
    brokers: int, data_dir: Path | None = None
) -> Iterator[LocalKafka | LocalCluster]:
    """`bench_broker` with `brokers` nodes: above one, a replicated cluster whose topics keep
    min(brokers, 3) copies and all but one in sync (the environment says so while it runs)."""
    if brokers == 1:
        with bench_broker(data_dir) as broker:
            yield broker
        return
    directory = data_dir or Path(tempfile.mkdtemp(prefix="tickwheel-bench-kafka-"))
    cluster = LocalCluster.on_free_ports(directory, size=brokers, heap="1g")
    with _running(cluster, copies=min(brokers, 3)):
        yield cluster


@contextmanager
def _running(kafka: LocalKafka | LocalCluster, copies: int) -> Iterator[None]:
    exit_on_sigterm()
    saved = {v: os.environ.get(v) for v in (REPLICATION_VAR, MIN_INSYNC_VAR)}
    os.environ[REPLICATION_VAR] = str(copies)
    os.environ[MIN_INSYNC_VAR] = str(min_insync_for(copies))
    kafka.start(timeout=180)
    try:
        yield
    finally:
        try:
            stop_all()
        finally:
            kafka.stop()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def replication() -> tuple[int, int]:
    """The copies of the broker `bench_broker` started: (replication factor, min in sync)."""
    return int(os.environ.get(REPLICATION_VAR, "1")), int(os.environ.get(MIN_INSYNC_VAR, "1"))


class Report:
    def __init__(self, title: str) -> None:
        when = datetime.now(tz=UTC).isoformat(timespec="seconds")
        self.lines = [
            f"# {title}",
            "",
            f"Run {when}, {os.cpu_count()} cores, broker on the same machine.",
            "",
        ]

    def add(self, line: str) -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, name: str) -> Path:
        path = REPORTS / name
        path.write_text("\n".join(self.lines) + "\n")
        print(f"report: {path}")
        return path
