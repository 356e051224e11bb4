"""`tickwheel history ...`: read-only SQL, the documented queries, and the schedule audit.

`history sql "SELECT ..."` runs one read-only statement; `history queries` lists the
documented analyst queries and `history query NAME --param ...` runs one; `history audit JOB
--from ... --to ...` lists every occurrence a recurring job owed and what became of it;
`history workflows timeline|open|steps|approvals|compensations` runs the workflow queries;
`history calendars NAME` shows a calendar's versions (`tickwheel.cli.history_calendars`).

Where the history is read (tickwheel.history.open_history_reader): with CLICKHOUSE_URL, the
server; embedded, through the history service's local endpoint while it owns the directory,
else the directory itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any

from tickwheel.cli import history_calendars
from tickwheel.cli.history_location import add_location_flags, history_settings
from tickwheel.cli.history_output import print_json, print_table
from tickwheel.errors import InvalidInput
from tickwheel.ports.history import QueryResult


def _add_param_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="value for a {NAME:Type} placeholder (repeatable)",
    )


def register(subparsers: Any) -> None:
    """Add the `history` command group to the top-level parser's subparsers."""
    history = subparsers.add_parser(
        "history",
        help="query the execution history (ClickHouse: embedded chDB or a server)",
        description="Query the execution history kept in ClickHouse. See docs/history.md and "
        "docs/queries.md.",
    )
    commands = history.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)
    sql = commands.add_parser(
        "sql",
        help="run one read-only SQL statement",
        description=(
            "Run one read-only statement (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN, EXISTS) over "
            "the history tables; writes and DDL are refused. Bind {name:Type} placeholders "
            "with --param name=value. Embedded, the statement runs in the history service "
            "when it owns the store."
        ),
    )
    sql.add_argument("statement", metavar="SQL", help='e.g. "SELECT count() FROM execution_events"')
    sql.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    _add_param_flag(sql)
    add_location_flags(sql)
    sql.set_defaults(handler=run_sql)

    listing = commands.add_parser(
        "queries",
        help="list the documented analyst queries and their parameters",
        description="The documented queries (topology/clickhouse/queries/*.sql, docs/queries.md).",
    )
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(handler=run_queries)

    named = commands.add_parser(
        "query",
        help="run a documented analyst query by name",
        description="Run one of the documented queries (see `tickwheel history queries`); "
        "instants accept any ISO 8601 form, e.g. --param since=2026-03-01T00:00:00Z.",
    )
    named.add_argument("name", metavar="NAME", help="e.g. fire_lateness, failure_rates")
    named.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    _add_param_flag(named)
    add_location_flags(named)
    named.set_defaults(handler=run_named_query)

    audit = commands.add_parser(
        "audit",
        help="expected versus actual occurrences of one recurring job over a window",
        description=(
            "Every occurrence the job owed in [--from, --to) — from its recorded definitions, "
            "or from --cron/--timezone — and what became of it: fired, skipped (by policy), "
            "missing, or paused."
        ),
    )
    audit.add_argument("job_id", metavar="JOB_ID")
    audit.add_argument("--from", dest="start", required=True, metavar="ISO", help="window start")
    audit.add_argument("--to", dest="end", required=True, metavar="ISO", help="window end")
    audit.add_argument("--cron", help="audit this schedule instead of the recorded definitions")
    audit.add_argument("--timezone", help="IANA zone of --cron (default UTC)")
    audit.add_argument("--dst-policy", help="DST policy of --cron (default auto)")
    audit.add_argument("--json", action="store_true", help="print the audit as JSON")
    add_location_flags(audit)
    audit.set_defaults(handler=run_audit)
    _register_workflows(commands)
    history_calendars.register(commands)


#: `history workflows VERB`: (help, takes a window) per verb besides `timeline` and `open`.
_WORKFLOW_WINDOWED = {
    "steps": "step duration and failure rate by definition version (steps first started in "
    "the window)",
    "approvals": "approval decisions and latency per actor (decisions made in the window)",
    "compensations": "compensations per definition version (instances started in the window)",
}


def _register_workflows(commands: Any) -> None:
    workflows = commands.add_parser(
        "workflows",
        help="the workflow history: an instance's timeline, open and stuck steps, statistics",
        description="The documented queries over workflow_events (docs/history.md, "
        '"Workflow history"). Each has --json.',
    )
    verbs = workflows.add_subparsers(dest="workflows_command", metavar="VERB", required=True)
    timeline = verbs.add_parser("timeline", help="every event of one instance, in order")
    timeline.add_argument("workflow_id", metavar="WORKFLOW_ID")
    opened = verbs.add_parser(
        "open", help="steps still running or waiting, stuck ones (past expectedDuration) first"
    )
    opened.add_argument("--as-of", metavar="ISO", help="judge at this instant (default now)")
    for verb, text in _WORKFLOW_WINDOWED.items():
        windowed = verbs.add_parser(verb, help=text)
        windowed.add_argument("--since", metavar="ISO", help="window start (default: all)")
        windowed.add_argument("--until", metavar="ISO", help="window end, exclusive")
    for parser in verbs.choices.values():
        parser.add_argument("--json", action="store_true", help="print the answer as JSON")
        add_location_flags(parser)
        parser.set_defaults(handler=run_workflows)


def _parse_params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InvalidInput("--param", f"{item!r} is not NAME=VALUE")
        params[name] = value
    return params


def _print(result: QueryResult, as_json: bool) -> None:
    if as_json:
        print_json(result, sys.stdout)
    else:
        print_table(result, sys.stdout)


def run_sql(args: argparse.Namespace) -> int:
    """Handler of `history sql`: print the answer as a table, or JSON with `--json`."""
    from tickwheel.history import open_history_reader

    params = _parse_params(args.param)
    reader = open_history_reader(history_settings(args))
    try:
        result = reader.query(args.statement, params)
    finally:
        reader.close()
    _print(result, args.json)
    return 0


def run_queries(args: argparse.Namespace) -> int:
    """Handler of `history queries`."""
    from tickwheel.history import analyst_queries

    queries = analyst_queries()
    if args.json:
        document = [
            {
                "name": q.name,
                "title": q.title,
                "params": dict(q.params),
                "param_docs": dict(q.param_docs),
                "file": str(q.path),
            }
            for q in queries.values()
        ]
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for query in queries.values():
        print(f"{query.name}: {query.title}")
        for name in query.params:
            print(f"    --param {name}=...  {query.param_docs.get(name, query.params[name])}")
    return 0


def run_named_query(args: argparse.Namespace) -> int:
    """Handler of `history query NAME`."""
    from tickwheel.history import open_history_reader, run_query

    params = _parse_params(args.param)
    reader = open_history_reader(history_settings(args))
    try:
        result = run_query(reader, args.name, params)
    finally:
        reader.close()
    _print(result, args.json)
    return 0


def _instant_ms(text: str, flag: str) -> int:
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            flag, f"{text!r} is not an ISO 8601 instant, e.g. 2026-03-01T00:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(flag, f"{text!r} has no offset; add Z or e.g. +01:00")
    return (parsed - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def run_audit(args: argparse.Namespace) -> int:
    """Handler of `history audit JOB`."""
    from tickwheel.history import open_history_reader, schedule_audit

    start_ms = _instant_ms(args.start, "--from")
    end_ms = _instant_ms(args.end, "--to")
    reader = open_history_reader(history_settings(args))
    try:
        audit = schedule_audit(
            reader,
            args.job_id,
            start_ms,
            end_ms,
            cron=args.cron,
            timezone=args.timezone,
            dst_policy=args.dst_policy,
        )
    finally:
        reader.close()
    if args.json:
        json.dump(audit, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(
        f"job {audit['job_id']} from {audit['from']} to {audit['to']}: "
        f"{audit['expected']} expected — {audit['fired']} fired, {audit['skipped']} skipped, "
        f"{audit['missing']} missing; {audit['paused']} while paused"
    )
    columns = ("scheduled_time", "status", "trigger", "lateness_ms", "outcome", "skip_reason")
    print_table(
        QueryResult(
            columns=columns,
            types=("String", "String", "String", "Nullable(Int64)", "String", "String"),
            rows=[tuple(row[c] for c in columns) for row in audit["occurrences"]],
        ),
        sys.stdout,
    )
    return 0


def run_workflows(args: argparse.Namespace) -> int:
    """Handler of `history workflows VERB`."""
    from tickwheel import history
    from tickwheel.clock import SystemClock

    verb = args.workflows_command
    if verb == "open":
        as_of = args.as_of
        as_of_ms = (
            int(SystemClock().now() * 1000) if as_of is None else _instant_ms(as_of, "--as-of")
        )
    elif verb != "timeline":
        since_ms = None if args.since is None else _instant_ms(args.since, "--since")
        until_ms = None if args.until is None else _instant_ms(args.until, "--until")
    reader = history.open_history_reader(history_settings(args))
    try:
        if verb == "timeline":
            timeline = history.workflow_timeline(reader, args.workflow_id)
        elif verb == "open":
            result = history.open_workflow_steps(reader, as_of_ms)
        else:
            query = {
                "steps": history.workflow_step_stats,
                "approvals": history.workflow_approvals,
                "compensations": history.workflow_compensations,
            }[verb]
            result = query(reader, since_ms, until_ms)
    finally:
        reader.close()
    if verb != "timeline":
        _print(result, args.json)
    elif args.json:
        json.dump(timeline, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        columns = (
            "seq",
            "event_time",
            "event_type",
            "step_id",
            "attempt",
            "actor",
            "status",
            "error",
        )
        print_table(
            QueryResult(
                columns=columns,
                types=("UInt64",) + ("String",) * 3 + ("UInt32",) + ("String",) * 3,
                rows=[tuple(event[c] for c in columns) for event in timeline],
            ),
            sys.stdout,
        )
    return 0
