"""`tickwheel dead-letters list|retry|discard`: the dead-letter topic, and what was done about it.

`list` reads `executions.dlq` and `executions.dlq.resolutions` to their ends; `retry` asks the
letter's job for a new execution and records the letter as retried; `discard` records it as
discarded, with a required note (decision 0102). Several ids may be given at once: each is
answered on its own line, and the exit status is 1 if any was refused.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tickwheel.errors import InvalidInput


def _by(given: str | None) -> str:
    import getpass
    import os

    return given or os.environ.get("TICKWHEEL_USER") or getpass.getuser()


def _add_list(verbs: Any) -> None:
    parser = verbs.add_parser(
        "list",
        help="every dead letter, with what was done about it (or only the unresolved ones)",
        description=(
            "Read executions.dlq and its resolutions to their ends and list one line per dead "
            "letter, oldest first. KAFKA_BOOTSTRAP_SERVERS names the cluster, "
            "TICKWHEEL_TOPIC_PREFIX the topic prefix."
        ),
    )
    parser.add_argument(
        "--unresolved", action="store_true", help="only letters not yet retried or discarded"
    )
    parser.add_argument("--job", default=None, help="only the letters of this job")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.core.timefmt import format_utc
    from tickwheel.sdk.dead_letters import DeadLettersClient

    found = DeadLettersClient(connect()).letters(include_resolved=not args.unresolved)
    if args.job is not None:
        found = [d for d in found if d.get("job_id") == args.job]
    if args.json:
        print(json.dumps(found, indent=2, sort_keys=True))
        return 0
    print(f"{'DEAD LETTER':<46} {'AT':<21} {'JOB':<24} {'STATE':<10} REASON")
    for d in found:
        state = d["resolution"]["action"] if d["resolution"] else "open"
        print(
            f"{d['dead_letter_id']:<46} {format_utc(d['event_time']):<21} "
            f"{d.get('job_id') or '-':<24} {state:<10} {d['reason']}"
        )
    return 0


def _add_action(verbs: Any, name: str) -> None:
    retry = name == "retry"
    if retry:
        summary = "ask for a dead letter's execution again (its job is triggered); mark it retried"
        more = (
            "Only an execution's dead letter can be retried: its job is triggered for a new "
            "execution with fresh attempts. A record that was refused or could not be read, "
            "a job the timer set aside, or a workflow step cannot be retried unchanged."
        )
    else:
        summary = "mark dead letters discarded: nothing is re-run"
        more = "The note says why; it is kept with the resolution."
    description = f"ID is a dead letter id as `tickwheel dead-letters list` shows. {more}"
    parser = verbs.add_parser(name, help=summary, description=description)
    parser.add_argument("ids", metavar="ID", nargs="+")
    parser.add_argument("--note", required=not retry, default=None, help="why")
    parser.add_argument(
        "--by", default=None, help="who (default: TICKWHEEL_USER, else the login name)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_act, action=name)


def _act(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.errors import TickwheelError
    from tickwheel.sdk.dead_letters import DeadLettersClient

    if args.action == "discard" and not (args.note or "").strip():
        raise InvalidInput("--note", "is empty; accepted: a few words on why")
    client = DeadLettersClient(connect())
    letters = client.letters()
    by = _by(args.by)
    results: list[dict[str, Any]] = []
    for dead_letter_id in dict.fromkeys(args.ids):
        try:
            if args.action == "retry":
                done = client.retry(dead_letter_id, by=by, note=args.note, letters=letters)
            else:
                done = client.discard(dead_letter_id, by=by, note=args.note, letters=letters)
            results.append({"dead_letter_id": dead_letter_id, "ok": True, "resolution": done})
        except TickwheelError as exc:
            results.append({"dead_letter_id": dead_letter_id, "ok": False, "error": str(exc)})
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        for r in results:
            if not r["ok"]:
                print(f"{r['dead_letter_id']}: refused: {r['error']}")
            elif args.action == "retry":
                print(
                    f"{r['dead_letter_id']}: retried (trigger {r['resolution']['retry_command_id']}"
                    f", execution {r['resolution']['retry_execution_id']})"
                )
            else:
                print(f"{r['dead_letter_id']}: discarded")
    return 0 if all(r["ok"] for r in results) else 1


def register(subparsers: Any) -> None:
    """Add the `dead-letters` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser(
        "dead-letters", help="dead letters: list, retry, discard (decision 0102)"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    _add_list(verbs)
    _add_action(verbs, "retry")
    _add_action(verbs, "discard")
