"""The deployment files: services/Dockerfile, .dockerignore, helm/tickwheel, and what they share
with docker-compose.yml (whose own tests are `test_deploy_compose.py`).

Neither Docker nor helm runs in this test suite, so these tests check what reading can: the
files parse; they name service modules that exist and environment variables the code reads;
they agree with each other (the bootstrap address is an advertised listener, the ClickHouse URL
carries the server's credentials, the timer's health probe hits its metrics port) and with the
local stack (the same Kafka release, uv release and Python version); and the Helm templates are
well-formed (balanced actions, defined helpers, every `.Values` path declared).

The YAML files are read with PyYAML's safe loader (a dev dependency).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.unit.deploy_facts import (
    CHART,
    ROOT,
    assert_runnable_modules,
    code_env_vars,
    dockerfile,
    helm_env_names,
    interpolate,
    load_yaml,
    read_compose,
    service_modules,
    templates,
    tickwheel_services,
)
from tickwheel.paths import project_root


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return read_compose()


# -- services/Dockerfile and .dockerignore ----------------------------------------------------


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


# -- both: modules and environment variables --------------------------------------------------
def test_every_service_module_the_deploy_files_run_exists() -> None:
    texts = [(ROOT / "docker-compose.yml").read_text(), *templates().values()]
    assert_runnable_modules(set().union(*(service_modules(t) for t in texts)))


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
