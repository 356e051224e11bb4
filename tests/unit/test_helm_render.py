"""The Helm chart as Helm itself renders it (`helm lint --strict`, `helm template`).

test_deploy_files.py reads the templates as text; this file runs the real renderer, built
by `make setup` from the Go module proxy (`go install helm.sh/helm/v3/cmd/helm`, into
.tools/bin), and checks what a cluster would be given: one Deployment per service the
package can run, selectors that find their pods, values that reach the objects they name.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "tickwheel"
SERVICES = ROOT / "src" / "tickwheel" / "services"
# The chart says kubeVersion >=1.21; helm template assumes an older cluster unless told.
KUBE_VERSION = "1.30.0"


def _helm() -> str:
    found = os.environ.get("TICKWHEEL_HELM") or shutil.which("helm")
    built = ROOT / ".tools" / "bin" / "helm"
    if found is None and built.exists():
        found = str(built)
    if found is None:
        pytest.fail(
            "helm is not built: run `make helm` (go install helm.sh/helm/v3/cmd/helm from the "
            "Go module proxy into .tools/bin), or set TICKWHEEL_HELM"
        )
    return found


def _render(*values: str) -> list[dict[str, Any]]:
    args = [_helm(), "template", "t", str(CHART), "--kube-version", KUBE_VERSION]
    for value in values:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def _module(deployment: dict[str, Any]) -> str:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    command = container["command"]
    assert command[:2] == ["python", "-m"], command
    return str(command[2])


def test_helm_lint_strict_passes() -> None:
    result = subprocess.run(
        [_helm(), "lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_one_deployment_per_runnable_service_and_each_module_exists() -> None:
    deployments = _of_kind(_render(), "Deployment")
    modules = sorted(_module(d) for d in deployments)
    runnable = sorted(f"tickwheel.services.{p.parent.name}" for p in SERVICES.glob("*/__main__.py"))
    assert modules == runnable
    for module in modules:
        assert importlib.util.find_spec(module) is not None, module


def test_every_selector_finds_the_pods_it_means() -> None:
    docs = _render()
    pod_labels = [d["spec"]["template"]["metadata"]["labels"] for d in _of_kind(docs, "Deployment")]
    for deployment in _of_kind(docs, "Deployment"):
        wanted = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert wanted.items() <= labels.items(), deployment["metadata"]["name"]
    selectors = [s["spec"]["selector"] for s in _of_kind(docs, "Service")]
    selectors += [
        p["spec"]["selector"]["matchLabels"] for p in _of_kind(docs, "PodDisruptionBudget")
    ]
    for selector in selectors:
        matched = [labels for labels in pod_labels if selector.items() <= labels.items()]
        assert len(matched) == 1, selector  # one component each, never every pod


def test_values_reach_the_objects_they_name() -> None:
    docs = _render("timer.replicas=5", "clickhouse.url=http://u:p@clickhouse:8123/tickwheel")
    by_name = {d["metadata"]["name"]: d for d in _of_kind(docs, "Deployment")}
    assert by_name["t-tickwheel-timer"]["spec"]["replicas"] == 5
    (secret,) = _of_kind(docs, "Secret")
    assert secret["stringData"]["url"] == "http://u:p@clickhouse:8123/tickwheel"
    history = by_name["t-tickwheel-history"]["spec"]["template"]["spec"]["containers"][0]
    url = next(e for e in history["env"] if e["name"] == "CLICKHOUSE_URL")
    assert url["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"]

    plain = _render()
    assert not _of_kind(plain, "Secret")  # no URL: embedded history, nothing secret to hold
