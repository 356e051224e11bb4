"""`tickwheel jobs create|get|list|update|pause|resume|delete|trigger|backfill|disabled`.

Every verb prints its answer (the definition, the command it sent) with `--json`, and a line
for people without; a definition comes in with `--file PATH` (`-` reads standard input) or
`--definition JSON`, never through `--json`, which only ever asks for JSON out."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tickwheel.errors import InvalidInput


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "jobs", help="create and change job definitions (KAFKA_BOOTSTRAP_SERVERS names the cluster)"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser("create", help="publish a new job definition")
    _document_source(create, "a JSON job definition")
    create.add_argument("--json", action="store_true", help="print JSON (the default)")
    create.set_defaults(handler=_create)

    update = verbs.add_parser(
        "update", help="change fields of a job (a JSON object of the fields to change)"
    )
    update.add_argument("job_id")
    _document_source(update, 'a JSON object of the fields to change, e.g. {"cron": "0 3 * * *"}')
    update.add_argument(
        "--expected-version",
        type=int,
        metavar="N",
        help="refuse unless the job is at version N (exit 1 naming expectedVersion)",
    )
    update.add_argument("--json", action="store_true", help="print JSON (the default)")
    update.set_defaults(handler=_update)

    get = verbs.add_parser("get", help="the current definition of a job")
    get.add_argument("job_id")
    get.add_argument("--json", action="store_true", help="print JSON (the default)")
    get.set_defaults(handler=_get)

    listing = verbs.add_parser("list", help="every job")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)

    for verb, help_text in (
        ("pause", "stop firing a job (occurrences while paused are not owed)"),
        ("resume", "fire a paused job again, from now"),
        ("delete", "delete a job (a tombstone; nothing fires any more)"),
        ("trigger", "fire a job once, now, outside its schedule"),
    ):
        sub = verbs.add_parser(verb, help=help_text)
        sub.add_argument("job_id")
        sub.add_argument("--json", action="store_true", help="print the answer as JSON")
        sub.set_defaults(handler=_simple, verb_name=verb)
        if verb == "pause":  # a disable's account (`jobs disabled`, the watchdog's review alert)
            sub.add_argument("--owner", help="who answers for the disabled job (disabledOwner)")
            sub.add_argument("--reason", help="why it is disabled (disabledReason)")
            sub.add_argument("--by", help="who disables it (disabledBy)")
            sub.add_argument(
                "--review-by", help="ISO 8601 instant to look at it again (disabledReviewBy)"
            )

    disabled = verbs.add_parser(
        "disabled", help="every disabled job: owner, reason, who disabled it, since when"
    )
    disabled.add_argument("--json", action="store_true", help="print JSON")
    disabled.set_defaults(handler=_disabled)

    backfill = verbs.add_parser(
        "backfill", help="emit every slot of a job's schedule in (--from, --to]"
    )
    backfill.add_argument("job_id")
    backfill.add_argument(
        "--from", dest="start", required=True, help="ISO 8601 instant with offset"
    )
    backfill.add_argument("--to", dest="end", required=True, help="ISO 8601 instant with offset")
    backfill.add_argument("--json", action="store_true", help="print the command as JSON")
    backfill.set_defaults(handler=_backfill)


def _document_source(parser: argparse.ArgumentParser, what: str) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", metavar="PATH", help=f"{what} ('-' reads standard input)")
    source.add_argument("--definition", metavar="JSON", help=f"{what}, inline")


def _client() -> Any:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.jobs import JobsClient

    return JobsClient(connect())


def _print(document: Any) -> None:
    print(json.dumps(document, indent=2, sort_keys=True))


def _read_document(args: argparse.Namespace) -> Any:
    """The JSON object given by --definition or --file (`-`: standard input), or InvalidInput."""
    if args.definition is not None:
        text = args.definition
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise InvalidInput("--file", f"cannot read {args.file!r}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidInput(
                "--file", f"{args.file!r} is not UTF-8 text; accepted: a JSON file"
            ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "definition",
            f'not valid JSON ({exc}); accepted: a JSON object, e.g. {{"type": "noop", ...}}',
        ) from None
    if not isinstance(document, dict):
        raise InvalidInput(
            "definition", f"a JSON {type(document).__name__}; accepted: a JSON object"
        )
    return document


def _create(args: argparse.Namespace) -> int:
    spec = _read_document(args)
    from tickwheel.sdk.jobs import definition_to_spec, validate_job

    # A bad definition is refused before any broker is asked (or found missing).
    validate_job(spec, int(time.time() * 1000))
    _print(definition_to_spec(_client().create(spec)))
    return 0


def _update(args: argparse.Namespace) -> int:
    changes = _read_document(args)
    from tickwheel.sdk.jobs import definition_to_spec

    record = _client().update(args.job_id, changes, args.expected_version)
    _print(definition_to_spec(record))
    return 0


def _get(args: argparse.Namespace) -> int:
    from tickwheel.core.describe import describe
    from tickwheel.sdk.jobs import definition_to_spec, schedule_of

    record = _client().get(args.job_id)
    _print({**definition_to_spec(record), "description": describe(schedule_of(record))})
    return 0


def _list(args: argparse.Namespace) -> int:
    from tickwheel.sdk.jobs import definition_to_spec

    jobs = [definition_to_spec(j) for j in _client().list()]
    if args.json:
        _print(jobs)
        return 0
    print(f"{'JOB':<36} {'TYPE':<10} {'SCHEDULE':<24} {'ZONE':<20} {'VER':>4} ENABLED")
    for job in jobs:
        schedule = job.get("cron") or job.get("runAt", "")
        print(
            f"{job['jobId']:<36} {job['type']:<10} {schedule:<24} {job['timezone']:<20} "
            f"{job['version']:>4} {job['enabled']}"
        )
    return 0


def _simple(args: argparse.Namespace) -> int:
    client = _client()
    account = {
        field: getattr(args, name, None)
        for name, field in (
            ("owner", "disabledOwner"),
            ("reason", "disabledReason"),
            ("by", "disabledBy"),
            ("review_by", "disabledReviewBy"),
        )
    }
    account = {k: v for k, v in account.items() if v is not None}
    if args.verb_name == "pause" and account:
        result = client.update(args.job_id, {"enabled": False, **account})
    else:
        result = getattr(client, args.verb_name)(args.job_id)
    if args.verb_name == "delete":
        answer: Any = {"deleted": args.job_id}
        line = f"deleted {args.job_id}"
    elif args.verb_name == "trigger":
        answer = result
        line = f"trigger requested for {args.job_id} (command {result['command_id']})"
    else:
        from tickwheel.sdk.jobs import definition_to_spec

        answer = definition_to_spec(result)
        line = f"{args.verb_name}d {args.job_id} (version {result['version']})"
    if args.json:
        _print(answer)
    else:
        print(line)
    return 0


def _disabled(args: argparse.Namespace) -> int:
    from tickwheel.cli.alerts import disabled_command

    return disabled_command(args)


def _backfill(args: argparse.Namespace) -> int:
    from tickwheel.sdk.jobs import parse_instant_ms

    command = _client().backfill(
        args.job_id, parse_instant_ms(args.start, "--from"), parse_instant_ms(args.end, "--to")
    )
    if args.json:
        _print(command)
    else:
        print(f"backfill requested for {args.job_id} (command {command['command_id']})")
    return 0
