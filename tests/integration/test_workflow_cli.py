"""`tickwheel workflows ...` as a user drives it, in subprocesses, against the real broker and
real timer, orchestrator and worker processes; and its refusals, which need no broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.timer_harness import wait_until
from tests.integration.workflow_harness import WorkflowStack, workflow_env

pytestmark = pytest.mark.integration
KEYS = "cli:cli-test-secret"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tickwheel.cli", "workflows", *args],
                          capture_output=True, text=True, timeout=60, check=False, env=env)  # fmt: skip


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_define_start_get_approve_and_get_again_from_the_command_line(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path
) -> None:
    env = {**workflow_env(kafka_bootstrap, applied_topology), "TICKWHEEL_APPROVAL_KEYS": KEYS,
           "TICKWHEEL_ACTOR": "cli-user"}  # fmt: skip
    stack = WorkflowStack(tmp_path, env).start()
    try:
        definition = tmp_path / "flow.json"
        definition.write_text(json.dumps({"definitionId": "cli_flow", "version": 1, "steps": [
            {"id": "ask", "kind": "approval", "timeout": "5m"},
            {"id": "go", "type": "noop", "dependsOn": ["ask"]}]}))  # fmt: skip
        assert _json(_cli(env, "define", "--file", str(definition), "--json"))["published"]
        started = _json(_cli(env, "start", "cli_flow", "--input", '{"n": 1}', "--json"))
        workflow_id = started["workflowId"]

        def waiting() -> bool:
            got = _cli(env, "get", workflow_id, "--json")
            return got.returncode == 0 and json.loads(got.stdout)["steps"]["ask"]["status"] == (
                "waiting")  # fmt: skip

        assert wait_until(waiting, 60)
        token = _json(_cli(env, "token", workflow_id, "ask", "--json"))["token"]
        sent = _json(_cli(env, "approve", "--token", token, "--note", "ok", "--json"))
        assert (sent["workflowId"], sent["round"], sent["actor"]) == (workflow_id, 1, "cli-user")

        def succeeded() -> bool:
            got = _cli(env, "get", workflow_id, "--json")
            return got.returncode == 0 and json.loads(got.stdout)["status"] == "succeeded"

        assert wait_until(succeeded, 60)
        timeline = _json(_cli(env, "get", workflow_id, "--json"))
        approved = [e for e in timeline["events"] if e["event_type"] == "approval_approved"]
        assert [(e["actor"], e["data"]["note"]) for e in approved] == [("cli-user", "ok")]
        listed = _json(_cli(env, "list", "--status", "succeeded", "--json"))
        assert [row["workflowId"] for row in listed] == [workflow_id]
        text = _cli(env, "get", workflow_id)
        assert text.returncode == 0 and "approval_approved ask by cli-user" in text.stdout
        again = _cli(env, "approve", "--token", token)  # sent, but the fold fences it
        assert again.returncode == 0
    finally:
        stack.stop()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("start", "x", "--input", "{nope"), "--input: not JSON"),
        (("approve", "--token", "v1.cli.e30.bad"), "token: the signature does not match"),
        (("approve", "--token", "garbage"), "token: not an approval token"),
        (("token", "wf", "ask", "--ttl-hours", "0"), "--ttl-hours"),
    ],
)
def test_refused_input_exits_2_with_one_line_before_any_broker_is_asked(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "TICKWHEEL_APPROVAL_KEYS": KEYS}
    result = _cli(env, *args)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("tickwheel: error: ") and says in line, line


def test_a_definition_that_does_not_parse_is_refused_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"definitionId": "x", "version": 1,
                               "steps": [{"id": "a", "type": "noop", "dependsOn": ["zz"]}]}))  # fmt: skip
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    result = _cli(env, "define", "--file", str(bad))
    assert result.returncode == 2 and "steps[0].dependsOn" in result.stderr, result.stderr
