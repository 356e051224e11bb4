"""The `tickwheel` command line.

Each command group lives in a module of this package exposing `register(subparsers)`;
`main` wires them together. The conventions every command keeps:

* exit 0 on success; 1 for an error the user can act on while the command itself was right
  (no broker answers, no such job, the stack is not running), printed as one line with no
  traceback; 2 for usage: a flag argparse refuses, or input tickwheel refuses (`InvalidInput`:
  a bad flag value, a bad definition);
* `--json` on every verb that prints data, as an output switch only;
* every flag that has a `TICKWHEEL_*` variable names it in `--help`;
* a command imports what it uses when it runs, so `--help` and light verbs stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from tickwheel.errors import InvalidInput, TickwheelError

# Each command and the module that registers it; the order is the order in `tickwheel --help`.
COMMANDS: dict[str, str] = {
    "stack": "tickwheel.cli.stack",
    "topology": "tickwheel.cli.topology",
    "jobs": "tickwheel.cli.jobs",
    "schedule": "tickwheel.cli.schedule",
    "calendars": "tickwheel.cli.calendars",
    "history": "tickwheel.cli.history",
    "worker": "tickwheel.cli.worker",
    "executions": "tickwheel.cli.executions",
    "workflows": "tickwheel.cli.workflows",
    "alerts": "tickwheel.cli.alerts",
    "dead-letters": "tickwheel.cli.dead_letters",
    "api-keys": "tickwheel.cli.api_keys",
    "demo": "tickwheel.cli.demo",
}
COMMAND_GROUPS: list[str] = list(COMMANDS.values())

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

EPILOG = """\
environment:
  KAFKA_BOOTSTRAP_SERVERS   the cluster (default: the running local stack's broker)
  TICKWHEEL_TOPIC_PREFIX    prefix of every topic name (one cluster, several deployments)
  TICKWHEEL_HOME            where the local stack keeps its state and logs (default .tickwheel)
  CLICKHOUSE_URL            read the history from a ClickHouse server instead of embedded chDB

exit status:
  0 success; 1 an error to act on (one line on stderr); 2 a usage error or refused input
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `tickwheel` parser with every command group registered, or only the group of the
    command `only` (what `main` builds when it knows the command: a verb imports what it uses,
    not every other group's modules)."""
    parser = argparse.ArgumentParser(
        prog="tickwheel",
        description="tickwheel: a Kafka-native job scheduler and durable workflow engine.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in [COMMANDS[only]] if only in COMMANDS else COMMAND_GROUPS:
        module = importlib.import_module(module_name)
        module.register(subparsers)
    return parser


def _is_client_error(exc: BaseException) -> bool:
    # The Kafka client is loaded only by verbs that talk to Kafka; when it is not loaded, no
    # exception can be one of its own, and importing it here would cost every other verb.
    if "confluent_kafka" not in sys.modules:
        return False
    from tickwheel.adapters.kafka.client import KafkaException

    return isinstance(exc, KafkaException)


def _fail(message: str) -> None:
    print(f"tickwheel: error: {message}", file=sys.stderr)


def run_handler(args: argparse.Namespace) -> int:
    """Run the parsed command's handler and turn what it raises into the exit code (the
    in-process tests drive commands through this, as `main` does)."""
    try:
        result: int = args.handler(args)
    except InvalidInput as exc:
        _fail(str(exc))
        return EXIT_USAGE
    except TickwheelError as exc:
        _fail(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away: nothing left to say, and nobody to say it to.
        # Point stdout at nothing, or the interpreter's own final flush fails the same way.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}")
        return EXIT_ERROR
    except Exception as exc:
        if not _is_client_error(exc):
            raise  # a bug: its traceback is what a report needs
        _fail(f"the Kafka client failed: {exc}")
        return EXIT_ERROR
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tickwheel` with `argv` (default: the process's arguments); returns the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    # A known command first: only its group is registered. Anything else (`--help`, a typo)
    # gets the whole parser, so the list of commands and argparse's messages are complete.
    only = words[0] if words and words[0] in COMMANDS else None
    try:
        # A group's flags may take their defaults from the environment (the worker's do).
        parser = build_parser(only)
    except InvalidInput as exc:
        _fail(str(exc))
        return EXIT_USAGE
    args = parser.parse_args(words)  # exits 2 on a usage error, with argparse's message
    return run_handler(args)


if __name__ == "__main__":
    sys.exit(main())
