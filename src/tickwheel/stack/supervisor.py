"""The local stack: a supervisor process that starts the broker and the services, restarts
any that crash, and keeps a status file that `tickwheel stack status` reads.

Layout under the stack home (`TICKWHEEL_HOME`, default `./.tickwheel`):
  kafka/            the broker's data (kept across restarts)
  kafka-cluster/    the nodes' data of `--brokers N` (node-1/, node-2/, ...)
  logs/<name>.log   one log per process
  stack/status.json what runs now: role, pid, state, restarts
  stack/supervisor.pid

What it runs is `stack/services.py`; its status, a detached start and a stop from outside are
`stack/control.py` (re-exported here, where the CLI and the demo find them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tickwheel.errors import StackError
from tickwheel.paths import state_home
from tickwheel.stack.broker import (
    BrokerConfig,
    LocalKafka,
    broker_serves_metadata,
    min_insync_for,
)
from tickwheel.stack.cluster import LocalCluster, cluster_configs
from tickwheel.stack.control import (
    _signal,
    dev_approval_keys,
    pid_alive,
    pid_path,
    read_status,
    stack_dir,
    start_detached,
    status_path,
    stop,
)
from tickwheel.stack.services import (
    STOP_BROKER_S,
    STOP_SERVICES_S,
    ProcessSpec,
    ProcessStatus,
    StackOptions,
    service_specs,
)

__all__ = [
    "STOP_BROKER_S",
    "STOP_SERVICES_S",
    "ProcessSpec",
    "ProcessStatus",
    "StackOptions",
    "Supervisor",
    "external_bootstrap",
    "pid_alive",
    "pid_path",
    "read_status",
    "service_specs",
    "stack_dir",
    "start_detached",
    "status_path",
    "stop",
]

RESTART_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0)


def external_bootstrap() -> str | None:
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS")


class Supervisor:
    """Runs in the foreground (or detached by `stack up --detach`) until SIGTERM/SIGINT."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.home = state_home()
        self.logs = self.home / "logs"
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.statuses: dict[str, ProcessStatus] = {}
        self.specs: dict[str, ProcessSpec] = {}
        self.next_restart: dict[str, float] = {}
        self.brokers: dict[str, LocalKafka] = {}  # by process name: broker, or broker-<id>
        local = ",".join(f"127.0.0.1:{options.kafka_port + i}" for i in range(options.brokers))
        self.bootstrap = external_bootstrap() or local
        self.topology_applied = False
        self.stopping = False

    # -- lifecycle -------------------------------------------------------------------------
    def run(self, on_event: Any = print) -> None:
        stack_dir().mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        pid_path().write_text(str(os.getpid()))
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        if self.options.brokers > 1 and not external_bootstrap():
            # The topology, and every service's check of it (they inherit this environment),
            # declare the cluster's copies.
            replicas = min(self.options.brokers, 3)
            os.environ.setdefault("TICKWHEEL_REPLICATION_FACTOR", str(replicas))
            os.environ.setdefault("TICKWHEEL_MIN_INSYNC_REPLICAS", str(min_insync_for(replicas)))
        # Approval links work out of the box: the stack's own key, unless one is given.
        if not os.environ.get("TICKWHEEL_APPROVAL_KEYS"):
            os.environ["TICKWHEEL_APPROVAL_KEYS"] = dev_approval_keys()
        try:
            self._start_broker(on_event)
            if self.stopping:
                return
            self._apply_topology(on_event)
            for spec in service_specs(self.options, self.bootstrap):
                self.specs[spec.name] = spec
                self._spawn(spec)
                on_event(f"started {spec.role} {spec.name} (pid {self.statuses[spec.name].pid})")
            self._write_status()
            while not self.stopping:
                self._reap_and_restart(on_event)
                self._write_status()
                time.sleep(0.5)
        finally:
            self._stop_all(on_event)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.stopping = True

    def _start_broker(self, on_event: Any) -> None:
        if external_bootstrap():
            on_event(f"using the Kafka cluster at {self.bootstrap} (KAFKA_BOOTSTRAP_SERVERS)")
            return
        count = self.options.brokers
        if count == 1:
            config = BrokerConfig(
                data_dir=self.home / "kafka",
                port=self.options.kafka_port,
                controller_port=self.options.controller_port,
            )
            self.brokers = {"broker": LocalKafka(config)}
            on_event(f"starting Apache Kafka (KRaft, one node) at {self.bootstrap}")
        else:
            ports = [self.options.kafka_port + i for i in range(2 * count)]
            cluster = LocalCluster(cluster_configs(self.home / "kafka-cluster", count, ports))
            self.brokers = {f"broker-{n}": node for n, node in cluster.nodes.items()}
            for node in self.brokers.values():
                node.prepare(cluster.cluster_id)
            on_event(
                f"starting Apache Kafka (KRaft, {count} nodes, each broker and controller; "
                f"{min(count, 3)} copies of each partition) at {self.bootstrap}"
            )
        started = time.monotonic()
        for name, broker in self.brokers.items():
            broker.prepare()
            spec = ProcessSpec(name=name, role="broker", command=broker.command())
            self.specs[name] = spec
            self._spawn(spec, log_path=broker.log_path)
        deadline = time.monotonic() + 90
        waiting = dict(self.brokers)
        while waiting:
            if self.stopping:
                return
            for name, broker in list(waiting.items()):
                if self.children[name].poll() is not None:
                    raise StackError(f"the Kafka broker {name} exited; see {broker.log_path}")
                if broker_serves_metadata(broker.bootstrap):
                    del waiting[name]
            if time.monotonic() > deadline:
                raise StackError(f"Kafka ({', '.join(waiting)}) did not serve metadata within 90s")
            time.sleep(0.2)
        on_event(f"Kafka is up in {time.monotonic() - started:.1f}s")

    def _apply_topology(self, on_event: Any) -> None:
        from tickwheel.adapters.kafka.admin import apply_topology

        created = apply_topology(bootstrap=self.bootstrap)
        self.topology_applied = True
        on_event(
            f"topology applied: created {', '.join(created)}"
            if created
            else "topology verified: every declared topic exists as declared"
        )

    # -- children --------------------------------------------------------------------------
    def _spawn(self, spec: ProcessSpec, log_path: Path | None = None) -> None:
        log_path = log_path or self.logs / f"{spec.name}.log"
        log = log_path.open("ab")
        env = {**os.environ, **spec.env}
        child = subprocess.Popen(
            spec.command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        self.children[spec.name] = child
        previous = self.statuses.get(spec.name)
        self.statuses[spec.name] = ProcessStatus(
            name=spec.name,
            role=spec.role,
            pid=child.pid,
            state="running",
            restarts=previous.restarts + 1 if previous else 0,
            started_at=time.time(),
            log=str(log_path),
        )

    def _reap_and_restart(self, on_event: Any) -> None:
        now = time.monotonic()
        for name, child in list(self.children.items()):
            status = self.statuses[name]
            if status.state == "restarting":
                if now >= self.next_restart[name]:
                    broker = self.brokers.get(name)
                    self._spawn(self.specs[name], broker.log_path if broker else None)
                    on_event(f"restarted {name} (restart #{self.statuses[name].restarts})")
                continue
            code = child.poll()
            if code is None:
                continue
            delay = RESTART_BACKOFF_S[min(status.restarts, len(RESTART_BACKOFF_S) - 1)]
            on_event(f"{name} exited with {code}; restarting in {delay}s")
            status.state = "restarting"
            status.pid = None
            self.next_restart[name] = now + delay

    def _stop_all(self, on_event: Any) -> None:
        # Services first, the brokers last, so services can finish their transactions; the
        # brokers all at once (the last of a cluster stopped alone waits for a lost quorum).
        services = [n for n in self.children if n not in self.brokers]
        self._terminate(services, STOP_SERVICES_S, on_event)
        brokers = [n for n in self.children if n in self.brokers]
        if brokers:
            self._terminate(brokers, STOP_BROKER_S, on_event)
        on_event("stack stopped")
        self._write_status(running=False)
        pid_path().unlink(missing_ok=True)

    def _terminate(self, names: list[str], bound_s: float, on_event: Any) -> None:
        """SIGTERM to every one at once (a stop costs one bound, not one each), SIGKILL to the
        session of any still running past `bound_s`, and wait for each."""
        live = {n: self.children[n] for n in names if self.children[n].poll() is None}
        for child in live.values():
            _signal(child.pid, signal.SIGTERM, group=False)
        deadline = time.monotonic() + bound_s
        for name, child in live.items():
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                on_event(f"{name} did not stop within {bound_s:g}s of SIGTERM; killing it")
                # Its whole session: whatever it started goes with it.
                _signal(child.pid, signal.SIGKILL, group=True)
                child.wait(10)
        for name in names:
            self.statuses[name].state = "stopped"
            self.statuses[name].pid = None

    def _write_status(self, running: bool = True) -> None:
        document = {
            "supervisor_pid": os.getpid() if running else None,
            "bootstrap_servers": self.bootstrap,
            "topology_applied": self.topology_applied,
            "updated_at": time.time(),
            "processes": [asdict(s) for s in self.statuses.values()],
        }
        tmp = status_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(document, indent=2))
        tmp.replace(status_path())


def _main() -> None:
    options = StackOptions(**json.loads(sys.argv[1])) if len(sys.argv) > 1 else StackOptions()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    Supervisor(options).run(on_event=log)


if __name__ == "__main__":
    _main()
