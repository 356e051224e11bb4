"""Create and verify the declared topology on a Kafka cluster."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from tickwheel.adapters.kafka.config import bootstrap_servers, bootstrap_source, client_overrides
from tickwheel.adapters.kafka.topology_changes import amended, read_changes
from tickwheel.environment import env_seconds
from tickwheel.errors import TickwheelError, TopologyMismatch
from tickwheel.topology import ObservedTopic, TopicSpec, differences, load_topology

# Long enough for a broker on another continent to answer a metadata request, short enough
# that a user who forgot `tickwheel stack up` is told so at once (decision 0050). A cluster
# known to answer slowly (or a loaded test machine) sets PROBE_TIMEOUT_VAR (decision 0191).
PROBE_TIMEOUT_S = 5.0
PROBE_TIMEOUT_VAR = "TICKWHEEL_BROKER_PROBE_TIMEOUT_S"
METADATA_TIMEOUT_S = 10.0

# What a metadata request that reached no broker fails with.
_UNREACHABLE = {
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._RESOLVE,
}


class BrokerUnreachable(TickwheelError, ConnectionError):
    """No Kafka broker answered a metadata request at `bootstrap` within `waited_s`."""

    def __init__(self, bootstrap: str, reason: str, waited_s: float, source: str = "") -> None:
        where = f"{bootstrap} ({source})" if source else bootstrap
        super().__init__(
            f"no Kafka broker answered at {where} within {waited_s:g}s: {reason}; "
            "start the local stack with `tickwheel stack up`, "
            "or set KAFKA_BOOTSTRAP_SERVERS to your cluster's address"
        )
        self.bootstrap = bootstrap
        self.reason = reason
        self.waited_s = waited_s


def admin_client(
    bootstrap: str | None = None, quiet: bool = False, **overrides: Any
) -> AdminClient:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap or bootstrap_servers(),
        **client_overrides(),
    }
    if quiet:
        # A health probe expects refusals while the broker starts; keep them out of the logs.
        config["log_level"] = 0
    config.update(overrides)
    return AdminClient(config)


def _reason(errors: list[KafkaError], fallback: KafkaError | None) -> str:
    """The most telling client error, e.g. 'Connect to ipv4#127.0.0.1:9092 failed:
    Connection refused', without librdkafka's broker-name prefix and state suffix."""
    for error in errors:
        if error.code() in (KafkaError._TRANSPORT, KafkaError._RESOLVE):
            text = str(error.str()).split("/bootstrap: ", 1)[-1]
            return text.split(" (after ", 1)[0]
    return str(fallback.str()) if fallback is not None else "no answer"


def require_broker(bootstrap: str | None = None, timeout: float | None = None) -> str:
    """The bootstrap address, once a broker there has answered a metadata request within
    `timeout` (default: PROBE_TIMEOUT_VAR, else PROBE_TIMEOUT_S); BrokerUnreachable (naming
    the address and where it came from) otherwise.

    Gives up before `timeout` once every bootstrap address has refused the connection at
    every address its host resolves to: a refusal is definitive, while a timeout or a name
    that does not resolve may still clear up (a broker starting, a DNS record propagating),
    so those wait the whole `timeout` (decision 0168)."""
    if timeout is None:
        timeout = env_seconds(PROBE_TIMEOUT_VAR, PROBE_TIMEOUT_S)
    source = "" if bootstrap else bootstrap_source()[1]
    bootstrap = bootstrap or bootstrap_servers()
    errors: list[KafkaError] = []
    admin = admin_client(bootstrap, quiet=True, error_cb=errors.append)
    entries = bootstrap_entries(bootstrap)
    started = time.monotonic()
    deadline = started + timeout
    while True:
        try:
            # In slices, so that the error callbacks (served by poll) can say "refused" early.
            metadata = admin.list_topics(
                timeout=max(0.0, min(_PROBE_SLICE_S, deadline - time.monotonic()))
            )
            break
        except KafkaException as exc:
            admin.poll(0)  # serves the queued error callbacks: they say why
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            refused = entries is not None and all_refused(entries, errors)
            if refused or time.monotonic() >= deadline:
                waited = _waited_s(time.monotonic() - started) if refused else timeout
                raise BrokerUnreachable(bootstrap, _reason(errors, error), waited, source) from None
    if not metadata.brokers:
        raise BrokerUnreachable(bootstrap, "the cluster lists no broker", timeout, source)
    return bootstrap


_PROBE_SLICE_S = 0.1
_DEFAULT_PORT = 9092
# librdkafka's error for one refused connection: "<host:port>/bootstrap: Connect to
# ipv4#127.0.0.1:9092 failed: Connection refused (after 0ms in state CONNECT)".
_REFUSED = re.compile(
    r"^(?P<name>\S+)/bootstrap: Connect to ipv[46]#(?P<address>\S+) failed: Connection refused"
)


def _waited_s(elapsed: float) -> float:
    """What the message says was waited: the elapsed time to a tenth of a second, at least 0.1."""
    return max(0.1, round(elapsed, 1))


def _host_port(text: str) -> tuple[str, int] | None:
    """`host:port`, `[v6]:port` or a bare host (Kafka's port) as (host, port); None if neither."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or str(_DEFAULT_PORT)
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    elif ":" not in text:
        host, port = text, str(_DEFAULT_PORT)
    else:
        return None
    return (host.lower(), int(port)) if host and port.isdigit() else None


def bootstrap_entries(bootstrap: str) -> set[tuple[str, int]] | None:
    """The (host, port) of every address in a `bootstrap.servers` string (a `PLAINTEXT://`
    style prefix dropped); None when one cannot be read, so that nothing counts as refused."""
    entries = set()
    for raw in bootstrap.split(","):
        entry = _host_port(raw.strip().rsplit("://", 1)[-1])
        if entry is None:
            return None
        entries.add(entry)
    return entries or None


def _resolved(host: str, port: int) -> set[str] | None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return None  # a name that does not resolve is not a refusal
    return {str(info[4][0]) for info in infos}


def all_refused(
    entries: set[tuple[str, int]],
    errors: list[KafkaError],
    resolve: Callable[[str, int], set[str] | None] = _resolved,
) -> bool:
    """True when the client's errors show every entry refused at every address its host
    resolves to (librdkafka tries one address per connection attempt, in turn)."""
    refused: dict[tuple[str, int], set[str]] = {}
    for error in errors:
        match = _REFUSED.match(str(error.str())) if error.code() == KafkaError._TRANSPORT else None
        name = _host_port(match["name"]) if match else None
        address = _host_port(match["address"]) if match else None
        if name is not None and address is not None:
            refused.setdefault(name, set()).add(address[0])
    for host, port in entries:
        addresses = resolve(host, port) if (host, port) in refused else None
        if not addresses or not addresses <= refused[(host, port)]:
            return False
    return True


def _list_topics(admin: AdminClient, bootstrap: str, timeout: float = METADATA_TIMEOUT_S) -> Any:
    try:
        return admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.code() in _UNREACHABLE:
            raise BrokerUnreachable(bootstrap, str(error.str()), timeout) from None
        raise


def cluster_metadata_ok(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the cluster answers a metadata request with at least one broker."""
    try:
        metadata = admin_client(bootstrap, quiet=True).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return bool(metadata.brokers)


def observe(specs: list[TopicSpec], bootstrap: str | None = None) -> dict[str, ObservedTopic]:
    """What the cluster has for the declared topics: partition counts and relevant configs."""
    bootstrap = bootstrap or bootstrap_servers()
    admin = admin_client(bootstrap)
    metadata = _list_topics(admin, bootstrap)
    present = [s for s in specs if s.name in metadata.topics]
    configs: dict[str, dict[str, str]] = {}
    if present:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, s.name) for s in present]
        for resource, future in admin.describe_configs(resources).items():
            entries = future.result(timeout=10)
            configs[resource.name] = {
                key: entry.value
                for key, entry in entries.items()
                if key in ("cleanup.policy", "retention.ms", "min.insync.replicas")
            }
    return {
        s.name: ObservedTopic(
            name=s.name,
            partitions=len(metadata.topics[s.name].partitions),
            configs=configs.get(s.name, {}),
            replication_factor=_fewest_replicas(metadata.topics[s.name].partitions),
        )
        for s in present
    }


def _fewest_replicas(partitions: Any) -> int | None:
    """The fewest replicas any partition is assigned (not how many are in sync now: a broker
    down for a restart does not make the topology wrong)."""
    counts = [len(p.replicas) for p in partitions.values()]
    return min(counts) if counts else None


VERIFY_AFTER_CREATE_S = 15.0


def apply_topology(specs: list[TopicSpec] | None = None, bootstrap: str | None = None) -> list[str]:
    """Create every missing topic, then verify the whole topology. Returns the topics created.

    Idempotent: a second call creates nothing. Raises TopologyMismatch when an existing topic
    differs (tickwheel never repartitions or reconfigures a topic behind an operator's back).
    """
    admin = admin_client(bootstrap)
    specs = amended(specs or load_topology(), read_changes(bootstrap))[0]
    observed = observe(specs, bootstrap)
    missing = [s for s in specs if s.name not in observed]
    created: list[str] = []
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(
                    s.name,
                    num_partitions=s.partitions,
                    replication_factor=s.replication_factor,
                    config=s.configs(),
                )
                for s in missing
            ],
            operation_timeout=30,
        )
        for name, future in futures.items():
            try:
                future.result(timeout=30)
                created.append(name)
            except KafkaException as exc:
                # Another process may have created it between observe and create.
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
    # Topics just created may not be in the metadata the broker answers with yet (seen under
    # load: every new topic reported missing; on a cluster, another broker asked for their
    # configs did not know them yet): look again for a few seconds before refusing.
    deadline = time.monotonic() + (VERIFY_AFTER_CREATE_S if created else 0.0)
    while True:
        try:
            verify_topology(specs, bootstrap)
            return created
        except (TopologyMismatch, KafkaException) as exc:
            unknown = isinstance(exc, KafkaException) and _is_unknown_topic(exc)
            if time.monotonic() >= deadline or not (isinstance(exc, TopologyMismatch) or unknown):
                raise
            time.sleep(0.25)


def _is_unknown_topic(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def verify_topology(
    specs: list[TopicSpec] | None = None, bootstrap: str | None = None
) -> list[TopicSpec]:
    """The declaration as the cluster's recorded resizes amend it (decision 0211); raise
    TopologyMismatch naming every difference, and any resize under way. Services call this at
    start-up and take their partition counts from what it returns."""
    specs, under_way = amended(specs or load_topology(), read_changes(bootstrap))
    if under_way:  # partition counts mid-resize differ as they must: only the resize is said
        raise TopologyMismatch(under_way)
    problems = differences(specs, observe(specs, bootstrap))
    if problems:
        raise TopologyMismatch(problems)
    return specs


def add_partitions(topics: list[str], count: int, bootstrap: str | None = None) -> None:
    """Grow each of `topics` to `count` partitions (a topic at `count` already is left as it
    is: a run before this one added them)."""
    admin = admin_client(bootstrap)  # held until the answers: a dropped client cancels them
    futures = admin.create_partitions([NewPartitions(t, count) for t in topics])
    for future in futures.values():
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if "INVALID_PARTITIONS" not in str(exc):
                raise
