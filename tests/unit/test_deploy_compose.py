"""docker-compose.yml, read as data (neither Docker nor Compose runs in this test suite):
it runs Kafka, ClickHouse, the topology and every service; its clients use an advertised Kafka
listener and log in to the ClickHouse server; services start after what they need, are probed
where they serve, and workers get longer to stop than their shutdown grace. The Dockerfile,
the Helm chart and what all the deploy files share are `test_deploy_files.py`.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.unit.deploy_facts import (
    ROOT,
    by_module,
    instance,
    interpolate,
    read_compose,
    tickwheel_services,
)
from tickwheel.services.worker.settings import WorkerSettings


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return read_compose()


def test_compose_runs_kafka_clickhouse_the_topology_and_every_service(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert {"kafka", "clickhouse", "topology"} <= set(services)
    assert services["topology"]["command"] == ["topology", "apply"]
    assert services["topology"]["restart"] == "no"
    timers = by_module(compose, "tickwheel.services.timer")
    assert len(timers) >= 2
    assert by_module(compose, "tickwheel.services.worker")
    assert by_module(compose, "tickwheel.services.history")
    # Static membership is keyed by instance name: two members with one name fence each other.
    static = {**timers, **by_module(compose, "tickwheel.services.history")}
    names = [instance(svc) for svc in static.values()]
    assert len(names) == len(set(names)), names
    for svc in tickwheel_services(compose).values():
        assert svc["build"] == {"context": ".", "dockerfile": "services/Dockerfile"}
    assert (ROOT / "services" / "Dockerfile").is_file()


def test_compose_kafka_is_the_local_stacks_release_on_one_kraft_node(
    compose: dict[str, Any],
) -> None:
    kafka = compose["services"]["kafka"]
    pom = (ROOT / "services" / "broker" / "pom.xml").read_text()
    release = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom)
    assert release is not None
    assert kafka["image"] == f"apache/kafka:{release.group(1)}"
    assert release.group(1).startswith("4.1.")
    env = kafka["environment"]
    expected = {
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }
    assert {k: env.get(k) for k in expected} == expected
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@kafka:")
    # KRaft formats storage with CLUSTER_ID: a base64url-encoded 16-byte UUID.
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16


def test_compose_clients_use_an_advertised_kafka_listener(compose: dict[str, Any]) -> None:
    advertised = compose["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    endpoints = {entry.split("://", 1)[1] for entry in advertised.split(",")}
    clients = tickwheel_services(compose)
    assert set(by_module(compose, "tickwheel.services.timer")) <= set(clients)
    for name, svc in clients.items():
        bootstrap = svc["environment"]["KAFKA_BOOTSTRAP_SERVERS"]
        assert bootstrap in endpoints, f"{name}: {bootstrap} is not one of {endpoints}"
        assert bootstrap.split(":")[0] in compose["services"]


def test_compose_history_url_logs_in_to_the_clickhouse_server(compose: dict[str, Any]) -> None:
    server = compose["services"]["clickhouse"]
    assert server["image"].startswith("clickhouse/clickhouse-server:")
    creds = {k: interpolate(v) for k, v in server["environment"].items()}
    assert creds["CLICKHOUSE_USER"] and creds["CLICKHOUSE_PASSWORD"]
    readers = {
        **by_module(compose, "tickwheel.services.history"),
        "cli": compose["services"]["cli"],
    }
    for name, svc in readers.items():
        url = urlsplit(interpolate(svc["environment"]["CLICKHOUSE_URL"]))
        assert (url.hostname, url.port) == ("clickhouse", 8123), name
        assert (url.username, url.password) == (
            creds["CLICKHOUSE_USER"],
            creds["CLICKHOUSE_PASSWORD"],
        )
        assert url.path.strip("/") == creds["CLICKHOUSE_DB"]


def test_compose_starts_services_after_kafka_the_topology_and_clickhouse(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    conditions = {"service_started", "service_healthy", "service_completed_successfully"}
    for name, svc in services.items():
        for target, rule in svc.get("depends_on", {}).items():
            assert rule["condition"] in conditions, (name, target)
            if rule["condition"] == "service_healthy":
                assert services[target].get("healthcheck", {}).get("test"), target
    assert services["topology"]["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    for module in ("timer", "worker", "history"):
        for name, svc in by_module(compose, f"tickwheel.services.{module}").items():
            depends = svc["depends_on"]
            assert depends["kafka"] == {"condition": "service_healthy"}, name
            assert depends["topology"] == {"condition": "service_completed_successfully"}, name
    for svc in by_module(compose, "tickwheel.services.history").values():
        assert svc["depends_on"]["clickhouse"] == {"condition": "service_healthy"}


def test_compose_probes_kafka_clickhouse_and_each_timers_metrics_port(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert "kafka-broker-api-versions.sh" in " ".join(services["kafka"]["healthcheck"]["test"])
    assert "SELECT 1" in " ".join(services["clickhouse"]["healthcheck"]["test"])
    for name, svc in by_module(compose, "tickwheel.services.timer").items():
        port = svc["environment"]["TICKWHEEL_METRICS_PORT"]
        assert f"http://127.0.0.1:{port}/metrics" in " ".join(svc["healthcheck"]["test"]), name


def test_compose_gives_workers_longer_to_stop_than_their_shutdown_grace(
    compose: dict[str, Any],
) -> None:
    default = next(f for f in dataclasses.fields(WorkerSettings) if f.name == "shutdown_grace_s")
    for name, svc in by_module(compose, "tickwheel.services.worker").items():
        grace = float(svc["environment"].get("TICKWHEEL_WORKER_SHUTDOWN_GRACE_S", default.default))
        assert int(svc["stop_grace_period"].removesuffix("s")) > grace, name


def test_compose_runs_the_orchestrator_the_watchdog_and_the_api(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for module in ("orchestrator", "watchdog", "api"):
        assert by_module(compose, f"tickwheel.services.{module}"), module
    api = services["api"]
    assert api["ports"] == ["127.0.0.1:8780:8780"]  # the host's loopback only
    assert api["environment"]["TICKWHEEL_API_HOST"] == "0.0.0.0"
    for name, port in (("orchestrator", "9466"), ("watchdog", "9465"), ("api", "8780")):
        probe = " ".join(services[name]["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port}/" in probe, name
    for name in ("watchdog", "api"):  # both read history from the ClickHouse server
        url = urlsplit(interpolate(services[name]["environment"]["CLICKHOUSE_URL"]))
        assert (url.hostname, url.port) == ("clickhouse", 8123), name
        assert services[name]["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    names = [instance(svc) for svc in tickwheel_services(compose).values() if "command" in svc
             and "--instance" in svc["command"]]  # fmt: skip
    assert len(names) == len(set(names)), names
