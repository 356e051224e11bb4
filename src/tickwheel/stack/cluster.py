"""A replicated Kafka cluster run locally: N KRaft nodes, each broker and controller, from the
same Maven-fetched jars as the one-node broker (`tickwheel.stack.broker`).

Every node is a voter of the controller quorum (a static quorum, `controller.quorum.voters`),
the internal topics keep min(N, 3) copies, and a write needs all but one of them in sync. The
test suite's cluster tier (`tests/cluster/`) and `tickwheel stack up --brokers 3` use it; a
node can be killed, stopped, restarted, or wiped and replaced while the others serve.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

from tickwheel.errors import StackError
from tickwheel.stack.broker import (
    HEAP,
    BrokerConfig,
    LocalKafka,
    _kafka_cluster_id,
    broker_serves_metadata,
    free_ports,
)


def cluster_configs(
    data_dir: Path, size: int, ports: list[int] | None = None, heap: str = HEAP
) -> list[BrokerConfig]:
    """The configs of a `size`-node cluster under `data_dir/node-<id>`: client ports first,
    then controller ports (2 x size of them; free ones when not given)."""
    ports = ports or free_ports(2 * size)
    if len(ports) != 2 * size:
        raise StackError(f"a {size}-node cluster needs {2 * size} ports, given {len(ports)}")
    client, controller = ports[:size], ports[size:]
    voters = ",".join(f"{i + 1}@127.0.0.1:{controller[i]}" for i in range(size))
    return [
        BrokerConfig(
            data_dir=data_dir / f"node-{i + 1}",
            port=client[i],
            controller_port=controller[i],
            heap=heap,
            node_id=i + 1,
            voters=voters,
            replicas=min(size, 3),
        )
        for i in range(size)
    ]


class LocalCluster:
    """Start, stop and fault the nodes of one local cluster. Nodes are numbered from 1."""

    def __init__(self, configs: list[BrokerConfig]) -> None:
        self.nodes = {config.node_id: LocalKafka(config) for config in configs}
        self.data_dir = configs[0].data_dir.parent

    @classmethod
    def on_free_ports(cls, data_dir: Path, size: int = 3, heap: str = HEAP) -> LocalCluster:
        return cls(cluster_configs(data_dir, size, heap=heap))

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    @property
    def cluster_id(self) -> str:
        path = self.data_dir / "cluster.id"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(_kafka_cluster_id())
        return path.read_text().strip()

    def start(self, timeout: float = 120.0) -> None:
        for node in self.nodes.values():
            node.prepare(self.cluster_id)
        for node in self.nodes.values():
            node.launch()
        for node_id in self.nodes:
            self.wait_node(node_id, timeout)

    def wait_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Until node `node_id` answers a metadata request (its process must be running)."""
        node = self.nodes[node_id]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.process is not None and node.process.poll() is not None:
                raise StackError(
                    f"Kafka node {node_id} exited with {node.process.returncode}; "
                    f"see {node.log_path}"
                )
            if broker_serves_metadata(node.bootstrap):
                return
            time.sleep(0.2)
        raise StackError(f"Kafka node {node_id} did not serve metadata within {timeout}s")

    def pid(self, node_id: int) -> int | None:
        process = self.nodes[node_id].process
        return process.pid if process is not None and process.poll() is None else None

    def running(self) -> list[int]:
        return [node_id for node_id in self.nodes if self.pid(node_id) is not None]

    def kill(self, node_id: int) -> None:
        """SIGKILL the node: no controlled shutdown, nothing flushed."""
        process = self.nodes[node_id].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(30)

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the node is alive but answers nothing (a stalled machine)."""
        process = self.nodes[node_id].process
        assert process is not None and process.poll() is None, f"node {node_id} is not running"
        process.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        process = self.nodes[node_id].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped or killed node again on its data directory."""
        node = self.nodes[node_id]
        node.launch()
        self.wait_node(node_id, timeout)

    def stop_node(self, node_id: int) -> None:
        """A controlled shutdown (SIGTERM), as a rolling upgrade stops each node."""
        self.resume(node_id)
        self.nodes[node_id].stop()

    def replace(self, node_id: int, timeout: float = 120.0) -> None:
        """The node is lost for good: its data directory is deleted, and a new node with the
        same id and address is formatted and started; it copies its replicas from the others."""
        self.kill(node_id)
        shutil.rmtree(self.nodes[node_id].config.data_dir, ignore_errors=True)
        self.nodes[node_id].prepare(self.cluster_id)
        self.restart(node_id, timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Every node at once: stopped one by one, the last would wait for a quorum that has
        gone before it gives up its controlled shutdown."""
        running = [n.process for n in self.nodes.values() if n.process and n.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
