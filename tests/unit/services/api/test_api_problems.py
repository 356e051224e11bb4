"""What an exception escaping a route or a console form becomes (`problems.from_exception`)."""

from __future__ import annotations

from tickwheel.sdk.job_commands import VerdictPending
from tickwheel.services.api.problems import from_exception


def test_a_late_verdict_is_a_202_naming_its_command_never_a_500() -> None:
    problem = from_exception(VerdictPending("cmd-1", "nightly", 5.0))
    assert (problem.status, problem.code) == (202, "verdict-pending")
    assert problem.headers["Location"] == "/v1/job-commands/cmd-1"
    assert problem.extensions["commandId"] == "cmd-1" and "cmd-1" in problem.detail


def test_anything_unexpected_is_still_a_500() -> None:
    assert from_exception(RuntimeError("boom")).status == 500
