"""The deployment files: docker-compose.yml, services/Dockerfile, .dockerignore, helm/tickwheel.

Neither Docker nor helm runs in this test suite, so these tests check what reading can: the
files parse; they name service modules that exist and environment variables the code reads;
they agree with each other (the bootstrap address is an advertised listener, the ClickHouse URL
carries the server's credentials, the timer's health probe hits its metrics port) and with the
local stack (the same Kafka release, uv release and Python version); and the Helm templates are
well-formed (balanced actions, defined helpers, every `.Values` path declared).

The YAML files are read with PyYAML's safe loader (a dev dependency).
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tickwheel.paths import project_root
from tickwheel.services.worker.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "tickwheel"
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def load_yaml(text: str) -> Any:
    """The deploy files as data (PyYAML, safe loader)."""
    return yaml.safe_load(text)


# -- facts from the code ----------------------------------------------------------------------
def code_env_vars() -> set[str]:
    """Every upper-case string constant in src/tickwheel: the names the code can read."""
    names: set[str] = set()
    for path in (ROOT / "src" / "tickwheel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(ENV_NAME.findall(node.value))
    return names


def interpolate(text: str) -> str:
    """Compose's `${VAR:-default}` with VAR unset."""
    return re.sub(r"\$\{[A-Z_][A-Z0-9_]*:-([^}]*)\}", r"\1", text)


def service_modules(text: str) -> set[str]:
    return set(re.findall(r"\btickwheel\.services\.[a-z_]+\b", text))


def assert_runnable_modules(modules: set[str]) -> None:
    assert modules, "no tickwheel.services.<name> module is referenced"
    for module in sorted(modules):
        assert importlib.util.find_spec(module) is not None, f"{module} does not exist"
        # `python -m package` runs the package's __main__.
        assert importlib.util.find_spec(f"{module}.__main__") is not None, f"{module}.__main__"


# -- docker-compose.yml -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc = load_yaml((ROOT / "docker-compose.yml").read_text())
    assert isinstance(doc, dict)
    return doc


def tickwheel_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the tickwheel image (built from services/Dockerfile)."""
    return {n: s for n, s in compose["services"].items() if s.get("image") == "tickwheel:local"}


def by_module(compose: dict[str, Any], module: str) -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if svc.get("entrypoint") == ["python", "-m", module]
    }


def instance(service: dict[str, Any]) -> str:
    command = service["command"]
    return str(command[command.index("--instance") + 1])


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


# -- services/Dockerfile and .dockerignore ----------------------------------------------------
def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", (ROOT / "services" / "Dockerfile").read_text())
    result = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, args = line.strip().partition(" ")
            result.append((word.upper(), " ".join(args.split())))
    return result


def test_dockerfile_builds_on_python_311_slim_with_the_makefiles_uv() -> None:
    steps = dockerfile()
    args = dict(a.split("=", 1) for i, a in steps if i == "ARG" and "=" in a)
    bases = [
        interpolate(a.replace("${PYTHON_IMAGE}", args["PYTHON_IMAGE"]))
        for i, a in steps
        if i == "FROM"
    ]
    assert bases and all(b.split()[0] == "python:3.11-slim" for b in bases), bases
    assert (ROOT / ".python-version").read_text().strip() == "3.11"
    makefile = (ROOT / "Makefile").read_text()
    uv = re.search(r"^UV_VERSION := (\S+)", makefile, re.M)
    assert uv is not None and args["UV_VERSION"] == uv.group(1)
    assert any(i == "RUN" and "uv sync --frozen --no-dev" in a for i, a in steps)


def test_dockerfile_installs_the_code_and_the_data_it_reads_at_the_project_root() -> None:
    steps = dockerfile()
    copies = [a.split() for i, a in steps if i == "COPY"]
    sources = {part.rstrip("/") for c in copies if not c[0].startswith("--") for part in c[:-1]}
    assert {"pyproject.toml", "uv.lock", "src", "schemas", "topology"} <= sources
    assert all((ROOT / s).exists() for s in sources), sources
    env = " ".join(a for i, a in steps if i == "ENV")
    root = re.search(r"TICKWHEEL_PROJECT_ROOT=(\S+)", env)
    assert root is not None and root.group(1) == "/app"
    # The runtime stage (after the last FROM) lays out /app like a checkout.
    final = steps[max(n for n, (i, _) in enumerate(steps) if i == "FROM") :]
    final_copies = [a.split() for i, a in final if i == "COPY"]
    assert ["topology/", "/app/topology/"] in final_copies
    assert ["schemas/", "/app/schemas/"] in final_copies
    user = [a for i, a in final if i == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert ("ENTRYPOINT", '["tickwheel"]') in final
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "tickwheel" in scripts


def test_the_project_root_the_image_sets_is_where_the_code_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKWHEEL_PROJECT_ROOT", str(tmp_path))
    assert project_root() == tmp_path.resolve()


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").strip("/")
        regex = re.escape(body).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*")
        regex = regex.replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, c) for c in candidates):
            excluded = not negate
    return excluded


def test_dockerignore_sends_what_the_image_copies_and_nothing_local() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [s.strip() for s in lines if s.strip() and not s.startswith("#")]
    needed = ["pyproject.toml", "uv.lock", "README.md"]
    for folder in ("src", "schemas", "topology"):
        files = [p for p in (ROOT / folder).rglob("*") if p.is_file()]
        needed += [str(p.relative_to(ROOT)) for p in files if "__pycache__" not in p.parts]
    assert len(needed) > 10
    assert [p for p in needed if dockerignored(p, patterns)] == []
    local = (".venv/bin/python", ".git/HEAD", ".tickwheel/kafka", "tests/unit/x.py")
    cached = ("src/tickwheel/__pycache__/x.pyc", "services/broker/target/lib/a.jar")
    for path in (*local, *cached):
        assert dockerignored(path, patterns), path


# -- helm/tickwheel ---------------------------------------------------------------------------
def templates() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((CHART / "templates").iterdir())}


def test_chart_metadata_is_a_v2_chart_of_this_release() -> None:
    chart = load_yaml((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "tickwheel"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert chart["appVersion"] == pyproject["project"]["version"]


def test_templates_are_well_formed_and_use_only_declared_values_and_helpers() -> None:
    values = load_yaml((CHART / "values.yaml").read_text())
    sources = templates()
    defined = set(re.findall(r'{{-?\s*define "([^"]+)"', sources["_helpers.tpl"]))
    used: set[str] = set()
    for name, text in sources.items():
        actions = re.findall(r"{{-?\s*(.*?)\s*-?}}", text, re.S)
        assert text.count("{{") == text.count("}}") == len(actions), name
        stack: list[str] = []
        for action in actions:
            word = action.split()[0] if action.split() else ""
            if word.startswith("/*"):
                continue
            if word in ("if", "range", "with", "define", "block"):
                stack.append(word)
            elif word == "else":
                assert stack and stack[-1] in ("if", "range", "with"), (name, action)
            elif word == "end":
                assert stack, f"{name}: unmatched end"
                stack.pop()
        assert stack == [], f"{name}: unclosed {stack}"
        used |= set(re.findall(r'(?:include|template) "([^"]+)"', text))
        for path in re.findall(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text):
            node: Any = values
            for key in path.strip(".").split("."):
                assert isinstance(node, dict) and key in node, f"{name}: .Values{path}"
                node = node[key]
        for other in re.findall(r'\$\.Template\.BasePath "/([^"]+)"', text):
            assert other in sources, f"{name} includes missing {other}"
    assert used <= defined, used - defined
    assert defined <= used, f"unused helpers: {defined - used}"


def test_chart_runs_one_deployment_per_service_named_by_its_pod() -> None:
    sources = templates()
    for service in ("timer", "worker", "history", "orchestrator", "watchdog", "api"):
        text = sources[f"{service}-deployment.yaml"]
        assert "kind: Deployment" in text
        assert f'command: ["python", "-m", "tickwheel.services.{service}"]' in text
        assert 'args: ["--instance", "$(TICKWHEEL_INSTANCE)"]' in text
        assert 'include "tickwheel.instanceEnv"' in text
        assert "configMapRef" in text
    helper = re.search(r'define "tickwheel.instanceEnv".*?{{-? end', sources["_helpers.tpl"], re.S)
    assert helper is not None
    assert "name: TICKWHEEL_INSTANCE" in helper.group(0)
    assert "fieldPath: metadata.name" in helper.group(0)
    # CLICKHOUSE_URL comes from a Secret, never a plain value.
    history = sources["history-deployment.yaml"]
    assert re.search(r"name: CLICKHOUSE_URL\s+valueFrom:\s+secretKeyRef:", history)


def test_chart_applies_the_topology_in_a_hook_and_guards_the_timers() -> None:
    sources = templates()
    job = sources["topology-job.yaml"]
    assert "kind: Job" in job and 'args: ["topology", "apply"]' in job
    hooks = re.search(r'"helm.sh/hook": (\S+)', job)
    assert hooks is not None
    assert {"pre-install", "pre-upgrade"} <= set(hooks.group(1).split(","))
    assert "restartPolicy: Never" in job
    timer_selector = 'include "tickwheel.selectorLabels" (dict "root" . "component" "timer")'
    for name, kind in (
        ("timer-service.yaml", "Service"),
        ("timer-pdb.yaml", "PodDisruptionBudget"),
    ):
        assert f"kind: {kind}" in sources[name] and timer_selector in sources[name]
    values = load_yaml((CHART / "values.yaml").read_text())
    assert "targetPort: metrics" in sources["timer-service.yaml"]
    assert "containerPort: {{ .Values.timer.metrics.port }}" in sources["timer-deployment.yaml"]
    grace = int(values["worker"]["env"]["TICKWHEEL_WORKER_SHUTDOWN_GRACE_S"])
    assert values["worker"]["terminationGracePeriodSeconds"] > grace


def test_chart_serves_the_api_on_its_port_and_probes_what_each_newer_service_serves() -> None:
    sources, values = templates(), load_yaml((CHART / "values.yaml").read_text())
    api, service = sources["api-deployment.yaml"], sources["api-service.yaml"]
    assert "kind: Service" in service and "targetPort: http" in service
    assert 'include "tickwheel.selectorLabels" (dict "root" . "component" "api")' in service
    assert "containerPort: {{ .Values.api.port }}" in api
    # The API refuses TICKWHEEL_API_AUTH=off off loopback, and listens where the Service sends.
    assert re.search(r'name: TICKWHEEL_API_HOST\s+value: "0.0.0.0"', api)
    assert "name: TICKWHEEL_API_AUTH" not in api  # keys, the default
    assert "path: /readyz" in api and "path: /healthz" in api
    for name in ("orchestrator", "watchdog"):
        text = sources[f"{name}-deployment.yaml"]
        port = f"{{{{ .Values.{name}.metrics.port }}}}"
        assert f"containerPort: {port}" in text
        assert f"http://127.0.0.1:{port}/metrics" in text  # exec probes: loopback
    ports = [values[n]["metrics"]["port"] for n in ("timer", "orchestrator", "watchdog")]
    assert len(set(ports)) == len(ports), ports
    # Secrets come from secretKeyRef, never plain values.
    for text in (api, sources["watchdog-deployment.yaml"]):
        assert re.search(r"name: CLICKHOUSE_URL\s+valueFrom:\s+secretKeyRef:", text)
    assert re.search(r"name: TICKWHEEL_APPROVAL_KEYS\s+valueFrom:\s+secretKeyRef:", api)
    assert values["orchestrator"]["env"]["TICKWHEEL_ORCHESTRATOR_RETENTION"] == "7d"


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


# -- both: modules and environment variables --------------------------------------------------
def test_every_service_module_the_deploy_files_run_exists() -> None:
    texts = [(ROOT / "docker-compose.yml").read_text(), *templates().values()]
    assert_runnable_modules(set().union(*(service_modules(t) for t in texts)))


def helm_env_names() -> set[str]:
    sources = templates()
    names = {n for t in sources.values() for n in re.findall(r"- name: ([A-Z][A-Z0-9_]*)\b", t)}
    common = re.search(
        r'define "tickwheel.commonEnv".*?{{- end }}\n{{- end }}', sources["_helpers.tpl"], re.S
    )
    assert common is not None
    names |= set(re.findall(r"^([A-Z][A-Z0-9_]*):", common.group(0), re.M))

    def env_maps(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "env" and isinstance(value, dict):
                    names.update(value)
                env_maps(value)

    env_maps(load_yaml((CHART / "values.yaml").read_text()))
    return names


def test_every_environment_variable_the_deploy_files_set_is_read_by_the_code(
    compose: dict[str, Any],
) -> None:
    compose_names = {k for s in tickwheel_services(compose).values() for k in s["environment"]}
    helm_names = helm_env_names()
    assert {"KAFKA_BOOTSTRAP_SERVERS", "CLICKHOUSE_URL"} <= compose_names
    assert {"KAFKA_BOOTSTRAP_SERVERS", "CLICKHOUSE_URL", "TICKWHEEL_INSTANCE"} <= helm_names
    dockerfile_env = {
        m for i, a in dockerfile() if i == "ENV" for m in re.findall(r"(TICKWHEEL_[A-Z_]+)=", a)
    }
    assert {"TICKWHEEL_PROJECT_ROOT", "TICKWHEEL_HOME"} <= dockerfile_env
    unread = (compose_names | helm_names | dockerfile_env) - code_env_vars()
    assert unread == set(), f"set by the deploy files but read nowhere in src/: {unread}"
