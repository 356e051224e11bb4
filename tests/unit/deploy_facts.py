"""What the deploy-file tests read: the files as data, and the facts from the code they are
checked against (the environment variables it reads, the service modules it has)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Any

import yaml

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
def read_compose() -> dict[str, Any]:
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


# -- services/Dockerfile ----------------------------------------------------------------------
def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", (ROOT / "services" / "Dockerfile").read_text())
    result = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, args = line.strip().partition(" ")
            result.append((word.upper(), " ".join(args.split())))
    return result


# -- helm/tickwheel ---------------------------------------------------------------------------
def templates() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((CHART / "templates").iterdir())}


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
