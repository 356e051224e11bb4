"""`tickwheel workflows VERB ...`: define, start, inspect, cancel, repair and approve workflows
(docs/workflows.md). Every write is a record on the cluster at KAFKA_BOOTSTRAP_SERVERS (topics
under TICKWHEEL_TOPIC_PREFIX); the orchestrator folds it. Operator writes carry `--actor`
(env TICKWHEEL_ACTOR, default the login name), shown in the timeline.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickwheel.errors import InvalidInput


def _client() -> Any:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.workflows import WorkflowsClient

    return WorkflowsClient(connect())


def _json_arg(text: str | None, flag: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput(flag, f"not JSON ({exc.args[0]}); accepted: a JSON value") from exc


def _actor_flag(parser: argparse.ArgumentParser) -> None:
    default = os.environ.get("TICKWHEEL_ACTOR") or getpass.getuser()
    parser.add_argument(
        "--actor",
        default=default,
        help="who does this, recorded in the timeline (env TICKWHEEL_ACTOR; "
        "default: your login name)",
    )
    parser.add_argument("--json", action="store_true", help="print what was sent as JSON")


def _done(args: argparse.Namespace, what: dict[str, Any], text: str) -> int:
    print(json.dumps(what, indent=2, sort_keys=True) if args.json else text)
    return 0


# -- define / start ----------------------------------------------------------------------
def _add_define(verbs: Any) -> None:
    p = verbs.add_parser(
        "define",
        help="publish a workflow definition version (checked first)",
        description="Check a definition (docs/workflows.md) and, against the "
        "previous version, its compatibility; then publish it. A version is "
        "immutable: publishing the same document again changes nothing.",
    )
    p.add_argument("--file", required=True, type=Path, help="the definition's JSON file")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=_define)


def _define(args: argparse.Namespace) -> int:
    try:
        document = json.loads(args.file.read_text())
    except ValueError as exc:
        raise InvalidInput("--file", f"{args.file} is not JSON ({exc})") from exc
    from tickwheel.core.workflow import parse_definition

    parse_definition(document)  # refused (exit 2) before any broker is looked for
    result = _client().define(document, actor=os.environ.get("TICKWHEEL_ACTOR"))
    verb = "published" if result["published"] else "already published (unchanged)"
    return _done(args, result, f"{result['definitionId']} v{result['version']} {verb}")


def _add_start(verbs: Any) -> None:
    p = verbs.add_parser("start", help="start an instance of a definition")
    p.add_argument("definition_id", metavar="DEFINITION")
    p.add_argument("--input", help="the instance's input, as JSON")
    p.add_argument("--id", dest="workflow_id", help="the instance's id (default: generated)")
    p.add_argument("--version", type=int, help="the version to run (default: the latest)")
    p.add_argument("--json", action="store_true", help="print the id as JSON")
    p.set_defaults(handler=_start)


def _start(args: argparse.Namespace) -> int:
    data = _json_arg(args.input, "--input")
    workflow_id = _client().start(
        args.definition_id, data, workflow_id=args.workflow_id, version=args.version
    )
    return _done(args, {"workflowId": workflow_id}, workflow_id)


# -- reads -------------------------------------------------------------------------------
def _now_ms() -> int:
    from tickwheel.clock import SystemClock

    return int(SystemClock().now() * 1000)


def _when(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def _add_get(verbs: Any) -> None:
    p = verbs.add_parser("get", help="an instance's timeline: each step, since when, what failed")
    p.add_argument("workflow_id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print the timeline as JSON")
    p.set_defaults(handler=_get)


def _get(args: argparse.Namespace) -> int:
    timeline = _client().get(args.workflow_id)
    if args.json:
        print(json.dumps(timeline.to_json(), indent=2, sort_keys=True, default=str))
        return 0
    print(
        f"workflow {timeline.workflow_id}  {timeline.definition_id} "
        f"v{timeline.definition_version}  {timeline.status}"
    )
    for step_id, st in timeline.steps.items():
        extra = f" compensation {st['compensation']}" if st["compensation"] else ""
        print(
            f"  {step_id:<20} {st['status']:<11} attempt {st['attempt']}  since "
            f"{_when(st['endedAt'] or st['startedAt'])}{extra}"
        )
    for event in timeline.events:
        who = f" by {event['actor']}" if event.get("actor") else ""
        error = f"  error: {event['error']}" if event.get("error") else ""
        step = f" {event['step_id']}" if event.get("step_id") else ""
        print(
            f"  #{event['seq']:<4} {_when(event['event_time'])} {event['event_type']}"
            f"{step}{who}{error}"
        )
    return 0


def _add_list(verbs: Any) -> None:
    p = verbs.add_parser("list", help="every instance, with its status")
    p.add_argument("--status", help="only instances with this status (e.g. running, failed)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    rows = _client().list(args.status)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    for row in rows:
        print(
            f"{row['workflowId']:<44} {row['definitionId']} v{row['definitionVersion']:<4} "
            f"{row['status']:<12} {_when(row['updatedAt'])}"
        )
    return 0


# -- operator writes ---------------------------------------------------------------------
def _add_cancel(verbs: Any) -> None:
    p = verbs.add_parser("cancel", help="cancel an instance (its onCancel: compensate or abandon)")
    p.add_argument("workflow_id", metavar="ID")
    p.add_argument("--reason", default="", help="why, recorded in the timeline")
    _actor_flag(p)
    p.set_defaults(handler=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    _client().cancel(args.workflow_id, actor=args.actor, reason=args.reason)
    return _done(
        args,
        {"workflowId": args.workflow_id, "cancel": True, "actor": args.actor},
        f"cancel requested for {args.workflow_id}",
    )


def _add_signal(verbs: Any) -> None:
    p = verbs.add_parser(
        "signal",
        help="send a signal to a workflow written as code (its ctx.wait_signal)",
        description="A signal sent before the instance waits for it is kept for the wait; "
        "sending the same --signal-id again delivers it once.",
    )
    p.add_argument("workflow_id", metavar="ID")
    p.add_argument("name", help="the signal's name, as the workflow waits for it")
    p.add_argument("--payload", help="what the wait returns, as JSON (default: null)")
    p.add_argument("--signal-id", help="names this sending, so a retry counts once")
    p.add_argument("--json", action="store_true", help="print what was sent as JSON")
    p.set_defaults(handler=_signal)


def _signal(args: argparse.Namespace) -> int:
    payload = _json_arg(args.payload, "--payload")
    signal_id = _client().signal(args.workflow_id, args.name, payload, signal_id=args.signal_id)
    return _done(
        args,
        {"workflowId": args.workflow_id, "signal": args.name, "signalId": signal_id},
        f"signal {args.name} sent to {args.workflow_id} ({signal_id})",
    )


def _add_check(verbs: Any) -> None:
    p = verbs.add_parser(
        "check",
        help="the deploy gate: replay running code workflows against new code",
        description="Replays the recorded history of every open instance of a workflow "
        "written as code (and of the last --finished ones) against the workflows in the "
        "given modules, and lists each instance the new code would diverge on, with the "
        "step, the history position and what changed. Exits 1 when any would, 0 when none.",
    )
    p.add_argument(
        "--module",
        dest="modules",
        action="append",
        required=True,
        metavar="MODULE",
        help="a module holding the new @workflow code (repeatable)",
    )
    p.add_argument(
        "--finished",
        type=int,
        default=20,
        metavar="N",
        help="also replay the N instances that ended last (default 20)",
    )
    p.add_argument("--json", action="store_true", help="print every verdict as JSON")
    p.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    import importlib
    import sys

    from tickwheel.sdk.workflow_gate import check_histories, workflows_in

    if args.finished < 0:
        raise InvalidInput("--finished", f"{args.finished}; accepted: 0 or more")
    sys.path.insert(0, os.getcwd())  # the author's modules, as `python -m` would find them
    try:
        modules = [importlib.import_module(name) for name in args.modules]
    except ImportError as exc:
        raise InvalidInput("--module", f"cannot import it: {exc}") from exc
    workflows = workflows_in(*modules)
    found = _client().code_histories(args.finished)
    report = check_histories(workflows, [history for _, _, history in found if history])
    if args.json:
        print(json.dumps([dataclasses.asdict(f) for f in report.findings], indent=2))
    else:
        for finding in report.findings:
            print(finding.line())
        verdict = "passes" if report.passed else f"{len(report.failures)} would diverge"
        print(
            f"{len(report.findings)} instance(s) replayed against {', '.join(args.modules)}: {verdict}"
        )
    return 0 if report.passed else 1


def _repair(verb: str, help_text: str, with_output: bool = False) -> Callable[[Any], None]:
    def add(verbs: Any) -> None:
        p = verbs.add_parser(verb, help=help_text)
        p.add_argument("workflow_id", metavar="ID")
        p.add_argument("step", metavar="STEP")
        if with_output:
            p.add_argument("--output", help="the step's output, as JSON")
        _actor_flag(p)
        p.set_defaults(handler=lambda args: _do_repair(verb, args))

    return add


def _do_repair(verb: str, args: argparse.Namespace) -> int:
    client = _client()
    if verb == "retry-step":
        client.retry_step(args.workflow_id, args.step, actor=args.actor)
    elif verb == "complete-step":
        client.complete_step(
            args.workflow_id, args.step, _json_arg(args.output, "--output"), actor=args.actor
        )
    else:
        client.skip_step(args.workflow_id, args.step, actor=args.actor)
    sent = {"workflowId": args.workflow_id, "step": args.step, "action": verb, "actor": args.actor}
    return _done(args, sent, f"{verb} {args.step} of {args.workflow_id} sent")


# -- approvals ---------------------------------------------------------------------------
def _add_token(verbs: Any) -> None:
    p = verbs.add_parser(
        "token",
        help="a signed approval token for a step's current round",
        description="Signed with the first key of TICKWHEEL_APPROVAL_KEYS "
        "(kid:secret,...); expires after --ttl-hours.",
    )
    p.add_argument("workflow_id", metavar="ID")
    p.add_argument("step", metavar="STEP")
    p.add_argument("--ttl-hours", type=float, default=72.0, help="how long it is valid")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_token)


def _token(args: argparse.Namespace) -> int:
    if args.ttl_hours <= 0:
        raise InvalidInput("--ttl-hours", f"{args.ttl_hours}; accepted: more than 0")
    token = _client().approval_token(args.workflow_id, args.step, int(args.ttl_hours * 3.6e6))
    return _done(args, {"token": token}, token)


def _add_reassign(verbs: Any) -> None:
    p = verbs.add_parser(
        "reassign",
        help="hand a waiting approval to others (a new round)",
        description="Opens a new round for --to; tokens of the old round are "
        "recorded as fenced from then on.",
    )
    p.add_argument("workflow_id", metavar="ID")
    p.add_argument("step", metavar="STEP")
    p.add_argument("--to", nargs="+", required=True, metavar="ASSIGNEE", help="the new assignees")
    _actor_flag(p)
    p.set_defaults(handler=_reassign)


def _reassign(args: argparse.Namespace) -> int:
    _client().reassign(args.workflow_id, args.step, args.to, actor=args.actor)
    sent = {
        "workflowId": args.workflow_id,
        "step": args.step,
        "assignees": args.to,
        "actor": args.actor,
    }
    return _done(
        args, sent, f"{args.step} of {args.workflow_id} reassigned to {', '.join(args.to)}"
    )


def _decision(verb: str) -> Callable[[Any], None]:
    def add(verbs: Any) -> None:
        p = verbs.add_parser(
            verb,
            help=f"{verb} an approval round with its token",
            description="The token (from `workflows token` or the notifier) "
            "is checked against TICKWHEEL_APPROVAL_KEYS; a decision for an "
            "old round or after the timeout is recorded as fenced.",
        )
        p.add_argument("--token", required=True, help="the approval token")
        p.add_argument("--note", default="", help="a note, kept in the audit record")
        _actor_flag(p)
        p.set_defaults(handler=lambda args: _decide(verb, args))

    return add


def _decide(verb: str, args: argparse.Namespace) -> int:
    from tickwheel.core.workflow.approval import verify_approval
    from tickwheel.sdk.workflows import approval_keys

    keys = approval_keys()
    if not keys:
        raise InvalidInput("TICKWHEEL_APPROVAL_KEYS", "not set; accepted: kid:secret,...")
    verify_approval(args.token, keys, _now_ms())  # a bad token: exit 2, no broker needed
    client = _client()
    decide = client.approve if verb == "approve" else client.reject
    claim = decide(args.token, actor=args.actor, note=args.note)
    sent = {
        "workflowId": claim.workflow_id,
        "step": claim.step,
        "round": claim.round,
        "decision": verb,
        "actor": args.actor,
    }
    return _done(
        args, sent, f"{verb} of {claim.step} (round {claim.round}) of {claim.workflow_id} sent"
    )


VERBS: list[Callable[[Any], None]] = [
    _add_define,
    _add_start,
    _add_get,
    _add_list,
    _add_cancel,
    _add_signal,
    _add_check,
    _repair("retry-step", "retry a step: its next attempt, same execution id"),
    _repair(
        "complete-step", "complete a stuck step (or failed compensation) by hand", with_output=True
    ),
    _repair("skip-step", "skip a step (dependents run; its output is null)"),
    _add_token,
    _decision("approve"),
    _decision("reject"),
    _add_reassign,
]


def register(subparsers: Any) -> None:
    """Add the `workflows` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("workflows", help="define, run, inspect and repair workflows")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for add_verb in VERBS:
        add_verb(verbs)
