"""A real Apache Kafka broker (KRaft, combined broker+controller) run locally: one node here,
several as a cluster in `tickwheel.stack.cluster`.

The broker's jars come from Maven Central through `services/broker/pom.xml` (fetched with
`mvn dependency:copy-dependencies`), and run on the machine's Java with a bounded heap.
The same launcher serves `tickwheel stack up` (a persistent data directory) and the test
suite (a temporary one). No Docker, no tarball downloads.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tickwheel.errors import StackError
from tickwheel.paths import project_root

HEAP = os.environ.get("TICKWHEEL_KAFKA_HEAP", "512m")


def broker_dir() -> Path:
    return project_root() / "services" / "broker"


def kafka_lib_dir() -> Path:
    return broker_dir() / "target" / "lib"


def ensure_kafka_jars() -> Path:
    """Fetch the broker's jars through Maven if they are not there yet; return their folder."""
    lib = kafka_lib_dir()
    if lib.is_dir() and any(lib.glob("kafka_2.13-*.jar")):
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("Maven (mvn) is needed to fetch Apache Kafka from Maven Central")
    result = subprocess.run(
        [mvn, "-q", "-B", "-f", str(broker_dir() / "pom.xml"), "dependency:copy-dependencies"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not any(lib.glob("kafka_2.13-*.jar")):
        raise StackError(f"fetching Kafka through Maven failed:\n{result.stdout}{result.stderr}")
    return lib


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise StackError("a Java 17+ runtime (java) is needed to run the Kafka broker")
    return java


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: every socket stays bound until all are picked (two calls
    to a one-port picker can be handed the same port, and a broker whose two listeners share
    one refuses to format its storage)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class BrokerConfig:
    data_dir: Path
    port: int = 9092
    controller_port: int = 9093
    heap: str = HEAP
    # Short timeouts keep a one-node test broker responsive; production clusters use defaults.
    extra: dict[str, str] | None = None
    # One node of a cluster (`tickwheel.stack.cluster`): its id, every controller of the
    # quorum as `id@host:port,...` (this node alone unless given), and how many copies the
    # internal topics keep (the cluster's size, at most 3).
    node_id: int = 1
    voters: str | None = None
    replicas: int = 1

    @classmethod
    def on_free_ports(cls, data_dir: Path, heap: str = HEAP) -> BrokerConfig:
        """A broker on two distinct free ports (its clients' and its controller's)."""
        port, controller_port = free_ports(2)
        return cls(data_dir=data_dir, port=port, controller_port=controller_port, heap=heap)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> str:
        # The internal topics (offsets, transactions) keep as many copies as the cluster can,
        # and need two of three in sync to take a write, as tickwheel's own topics do.
        replicas = str(self.replicas)
        min_isr = str(min_insync_for(self.replicas))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters
            or f"{self.node_id}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            # The internal topics cannot have more replicas than brokers.
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": "6",
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": "6",
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            # A replica that was out of sync never becomes leader: a write acknowledged by
            # min.insync.replicas copies is never lost to a failover (Kafka's default, said).
            "unclean.leader.election.enable": "false",
            # Topics exist only because topology/ declares them.
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            # Aborted or zombie transactions are timed out quickly on a dev broker.
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "5000",
            "log.cleaner.backoff.ms": "5000",
        }
        props.update(self.extra or {})
        return "".join(f"{k}={v}\n" for k, v in props.items())


def min_insync_for(replicas: int) -> int:
    """Copies that must hold a write before it is acknowledged: all but one (two of three),
    at least one."""
    return max(1, replicas - 1)


class LocalKafka:
    """Format, start, health-check and stop one local broker."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return self.config.bootstrap

    @property
    def properties_path(self) -> Path:
        return self.config.data_dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.config.data_dir / "broker.log"

    def _classpath(self) -> str:
        return str(ensure_kafka_jars() / "*")

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = broker_dir() / "log4j2.properties"
        return [
            java_executable(),
            f"-Xmx{self.config.heap}",
            f"-Xms{self.config.heap}",
            "-XX:+UseG1GC",
            "-XX:TieredStopAtLevel=1",  # faster start-up; a dev broker is never CPU-bound by C2
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            self._classpath(),
            main,
            *args,
        ]

    def prepare(self, cluster_id: str | None = None) -> None:
        """Write the config and format storage once; an already formatted directory is kept.
        `cluster_id`: the cluster this node belongs to (every node of a cluster shares it)."""
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text(self.config.properties())
        if (self.config.data_dir / "logs" / "meta.properties").exists():
            return
        cluster_id_file = self.config.data_dir / "cluster.id"
        if cluster_id is not None:
            cluster_id_file.write_text(cluster_id)
        elif not cluster_id_file.exists():
            cluster_id_file.write_text(_kafka_cluster_id())
        result = subprocess.run(
            self.format_command(cluster_id_file.read_text().strip()),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise StackError(f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}")

    def format_command(self, cluster_id: str) -> list[str]:
        # One `--cluster-id=ID` token: as two tokens, an id that begins with '-' (an older
        # `cluster.id` file may hold one) is read by argparse4j as an option.
        return self._java(
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={cluster_id}",
            "--config",
            str(self.properties_path),
        )

    def command(self) -> list[str]:
        return self._java("kafka.Kafka", str(self.properties_path))

    def start(self, timeout: float = 60.0) -> None:
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the broker's process without waiting for it (a cluster's nodes start
        together: none serves until a quorum of controllers is up)."""
        self.prepare()
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise StackError(
                    f"the Kafka broker exited with {self.process.returncode}; see {self.log_path}"
                )
            if broker_serves_metadata(self.bootstrap):
                return
            time.sleep(0.2)
        raise StackError(f"the Kafka broker did not serve metadata within {timeout}s")

    def stop(self, timeout: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def broker_serves_metadata(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when a broker at `bootstrap` answers a metadata request."""
    # Imported here so the launcher stays usable before the Kafka adapter is needed.
    from tickwheel.adapters.kafka.admin import cluster_metadata_ok

    return cluster_metadata_ok(bootstrap, timeout)


def _kafka_cluster_id(random_bytes: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (22 chars).

    Never beginning with '-', as Kafka's own `Uuid.randomUuid()` rules out: command-line
    tools would read such an id as an option (one start in 64 failed that way).
    """
    import base64

    while True:
        text = base64.urlsafe_b64encode(random_bytes()).decode().rstrip("=")
        if not text.startswith("-"):
            return text
