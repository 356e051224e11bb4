"""A service's settings, declared once (issue 32 item 6, decision 0215).

Each service has one frozen dataclass whose fields say, each in one place, which variable sets
them, how its text is read, the default and what it means:

    tick_ms: int = setting("TICKWHEEL_TIMER_TICK_MS", Whole(), 50, "how often the timer ticks, ms")

From that declaration come `from_env(Settings, environ)`, the service's flags (`add_flags`:
each flag names its variable and default in `--help`, and a flag given wins over its
variable), its `--help` and the variables table in docs/deploy.md (`services/variables.py`).
A few fields gather several variables into one value (`group`: the watchdog's thresholds).

A bad value is refused with one line naming the variable (or the flag) and what is accepted
(`InvalidInput`); `load` prints it as `tickwheel <service>: error: ...` and exits 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tickwheel.adapters.kafka.config import bootstrap_servers
from tickwheel.durations import format_duration_ms, parse_duration_ms
from tickwheel.errors import InvalidInput, TickwheelError

T = TypeVar("T")
_KEY = "tickwheel.setting"


class Parser(Protocol):
    """Reads a variable's (or a flag's) text; raises InvalidInput naming `name`."""

    def __call__(self, name: str, text: str) -> Any: ...

    def show(self, value: Any) -> str:
        """The value as its variable would spell it (for `--help` and the docs)."""
        ...


@dataclass(frozen=True)
class Text:
    """Any text, stripped."""

    def __call__(self, name: str, text: str) -> str:
        return text.strip()

    def show(self, value: Any) -> str:
        return str(value)


@dataclass(frozen=True)
class Whole:
    """A whole number of at least `minimum`; with `zero_is_none`, 0 reads as None (unset)."""

    minimum: int = 1
    zero_is_none: bool = False

    def __call__(self, name: str, text: str) -> int | None:
        try:
            value = int(text)
        except ValueError:
            value = self.minimum - 1
        if value < self.minimum:
            raise InvalidInput(name, f"{text!r} is not a whole number of at least {self.minimum}")
        return None if self.zero_is_none and value == 0 else value

    def show(self, value: Any) -> str:
        return "0" if value is None else str(value)


@dataclass(frozen=True)
class Positive:
    """A finite number above 0."""

    def __call__(self, name: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0 or math.isinf(value):
            raise InvalidInput(name, f"{text!r}; accepted: a positive number")
        return value

    def show(self, value: Any) -> str:
        return f"{value:g}"


@dataclass(frozen=True)
class Port:
    """A TCP port, 1 to 65535."""

    def __call__(self, name: str, text: str) -> int:
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise InvalidInput(name, f"{text!r}; accepted: a port from 1 to 65535")
        return int(text)

    def show(self, value: Any) -> str:
        return str(value)


@dataclass(frozen=True)
class Seconds:
    """A finite decimal number of seconds above 0 (at least 0 with `zero_ok`); `as_ms` gives
    whole milliseconds (the variable is in seconds, the field in ms)."""

    zero_ok: bool = False
    as_ms: bool = False

    def __call__(self, name: str, text: str) -> float | int:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value >= 0 if self.zero_ok else value > 0)):
            floor = "0 or more" if self.zero_ok else "above 0"
            raise InvalidInput(
                name, f"{text!r} is not a number of seconds {floor}, e.g. '30', '2.5'"
            )
        return int(value * 1000) if self.as_ms else value

    def show(self, value: Any) -> str:
        seconds = value / 1000 if self.as_ms else value
        return f"{seconds:g}"


@dataclass(frozen=True)
class Duration:
    """A duration as people write it ('10m', '7d'), as milliseconds, of at least `minimum_ms`."""

    minimum_ms: int = 1000

    def __call__(self, name: str, text: str) -> int:
        value = parse_duration_ms(text, name)
        if value < self.minimum_ms:
            floor = format_duration_ms(self.minimum_ms)
            raise InvalidInput(name, f"{text!r} is under {floor}; accepted: e.g. '10m', '7d'")
        return value

    def show(self, value: Any) -> str:
        return format_duration_ms(int(value))


@dataclass(frozen=True)
class Choice:
    """One of `accepted` (compared in lower case with `fold`, and given back upper case)."""

    accepted: tuple[str, ...]
    fold: bool = False

    def __call__(self, name: str, text: str) -> str:
        value = text.strip().upper() if self.fold else text.strip()
        if value not in self.accepted:
            raise InvalidInput(name, f"{text!r}; accepted: {', '.join(self.accepted)}")
        return value

    def show(self, value: Any) -> str:
        return str(value)


@dataclass(frozen=True)
class Items:
    """Comma-separated items (or a flag's several values), blanks dropped, each read by `item`."""

    item: Callable[[str, str], Any] | None = None

    def __call__(self, name: str, text: str) -> list[Any]:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        return [self.item(name, p) for p in parts] if self.item else parts

    def show(self, value: Any) -> str:
        return ",".join(str(v) for v in value)


@dataclass(frozen=True)
class Using:
    """Text read by a function of (variable, text) that says itself what it accepts."""

    read: Callable[[str, str], Any]
    shown: Callable[[Any], str] = str

    def __call__(self, name: str, text: str) -> Any:
        return self.read(name, text)

    def show(self, value: Any) -> str:
        return self.shown(value)


@dataclass(frozen=True)
class Var:
    """One variable: its name, how its text is read, its default, what it means, its flag
    (`""`: one named after the field, `None`: none) and, for a default computed when the
    settings are made, `shown` says it in words."""

    env: str
    parse: Parser
    default: Any = dataclasses.MISSING
    help: str = ""
    flag: str | None = ""
    default_factory: Callable[[], Any] | None = None
    shown: str | None = None
    many: bool = False  # the flag takes several values (`--types a b`), read as "a,b"

    def default_value(self) -> Any:
        return self.default_factory() if self.default_factory else self.default

    def default_text(self) -> str:
        if self.shown is not None:
            return self.shown
        if self.default_factory is not None or self.default is None:
            return ""
        return self.parse.show(self.default)

    def read(self, environ: Mapping[str, str]) -> Any:
        text = environ.get(self.env, "").strip()
        return self.parse(self.env, text) if text else self.default_value()


@dataclass(frozen=True)
class _Group:
    build: Callable[..., Any]
    members: dict[str, Var]


def var(
    env: str,
    parse: Parser,
    default: Any = None,
    help: str = "",
    *,
    flag: str | None = "",
    default_factory: Callable[[], Any] | None = None,
    shown: str | None = None,
    many: bool = False,
) -> Var:
    """One variable of a `group`."""
    return Var(env, parse, default, help, flag, default_factory, shown, many)


def setting(
    env: str,
    parse: Parser,
    default: Any = None,
    help: str = "",
    *,
    flag: str | None = "",
    default_factory: Callable[[], Any] | None = None,
    shown: str | None = None,
    many: bool = False,
) -> Any:
    """A settings field set by one variable (see the module's docstring)."""
    spec = var(
        env,
        parse,
        default,
        help,
        flag=flag,
        default_factory=default_factory,
        shown=shown,
        many=many,
    )
    if default_factory is not None:
        return field(default_factory=default_factory, metadata={_KEY: spec})
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata={_KEY: spec})
    return field(default=default, metadata={_KEY: spec})


def group(build: Callable[..., Any], **members: Var) -> Any:
    """A settings field made of several variables: `build(**values)`, each member's value by
    its keyword (the watchdog's `Thresholds`, the history store's settings)."""

    def default() -> Any:
        return build(**{key: member.default_value() for key, member in members.items()})

    return field(default_factory=default, metadata={_KEY: _Group(build, members)})


def _fields(cls: type) -> list[tuple[dataclasses.Field[Any], Var | _Group]]:
    if not dataclasses.is_dataclass(cls):
        return []
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(cls) if _KEY in f.metadata]


def variables(cls: type) -> list[tuple[str, Var]]:
    """Every variable of a settings class, in declaration order, each with its flag's name
    (`""` when it has none)."""
    found: list[tuple[str, Var]] = []
    for f, spec in _fields(cls):
        members = spec.members.items() if isinstance(spec, _Group) else [(f.name, spec)]
        found.extend((_flag(key, member), member) for key, member in members)
    return found


def _flag(key: str, member: Var) -> str:
    if member.flag is None:
        return ""
    return member.flag or "--" + key.replace("_", "-")


def _dest(flag: str) -> str:
    return "setting_" + flag.removeprefix("--").replace("-", "_")


def from_env(cls: type[T], environ: Mapping[str, str] | None = None, **given: Any) -> T:
    """The settings from `environ` (the process's when None); `given` fields win."""
    return _build(cls, os.environ if environ is None else environ, None, given)


def from_args(
    cls: type[T], args: argparse.Namespace, environ: Mapping[str, str] | None = None, **given: Any
) -> T:
    """The settings from the environment, each overridden by its flag when it was given."""
    return _build(cls, os.environ if environ is None else environ, args, given)


def _value(member: Var, flag: str, environ: Mapping[str, str], args: Any) -> Any:
    given = getattr(args, _dest(flag), None) if args is not None and flag else None
    if given is None:
        return member.read(environ)
    text = ",".join(given) if isinstance(given, list) else given
    return member.parse(flag, text) if text.strip() else member.default_value()


def _build(cls: type[T], environ: Mapping[str, str], args: Any, given: Mapping[str, Any]) -> T:
    values: dict[str, object] = {}  # keyword arguments of `cls`, one per field
    for f, spec in _fields(cls):
        if f.name in given:
            continue
        if isinstance(spec, _Group):
            values[f.name] = spec.build(
                **{
                    key: _value(member, _flag(key, member), environ, args)
                    for key, member in spec.members.items()
                }
            )
        else:
            values[f.name] = _value(spec, _flag(f.name, spec), environ, args)
    return cls(**values, **given)


def add_flags(cls: type, parser: argparse.ArgumentParser) -> None:
    """A flag per variable of `cls` that has one; its help names the variable and default."""
    for flag, member in variables(cls):
        if not flag:
            continue
        default = member.default_text()
        said = f"env {member.env}" + (f"; default {default}" if default else "")
        parser.add_argument(
            flag,
            dest=_dest(flag),
            default=None,
            nargs="+" if member.many else None,
            action="extend" if member.many else "store",
            metavar=flag.removeprefix("--").replace("-", "_").upper(),
            help=f"{member.help} ({said})" if member.help else f"({said})",
        )


# Read by shared modules on every service's behalf (the cluster's topic names and copies, where
# the topology lives): listed in every `--help` and once in docs/deploy.md.
SHARED = (
    Var(
        "TICKWHEEL_TOPIC_PREFIX",
        Text(),
        "",
        "prepended to every topic and consumer group name: several installations on one cluster",
        shown='"" (none)',
    ),
    Var(
        "TICKWHEEL_TOPOLOGY_FILE",
        Text(),
        None,
        "the topics' declaration",
        shown="topology/topics.toml of the project",
    ),
    Var(
        "TICKWHEEL_REPLICATION_FACTOR",
        Whole(),
        None,
        "copies of every topic's partitions",
        shown="the topology's",
    ),
    Var(
        "TICKWHEEL_MIN_INSYNC_REPLICAS",
        Whole(),
        None,
        "copies that must acknowledge a write",
        shown="all but one, at least 1",
    ),
    Var(
        "TICKWHEEL_HOME",
        Text(),
        None,
        "where local state lives (the embedded history store, the local stack's records)",
        shown=".tickwheel",
    ),
)


def epilog(cls: type | None = None) -> str:
    """The `--help` epilog: the variables of `cls` that have no flag, and those every service
    reads through the shared modules."""
    own = [(v.env, v.help, v.default_text()) for flag, v in variables(cls or object) if not flag]
    shared = [(v.env, v.help, v.default_text()) for v in SHARED]
    width = max(len(env) for env, _, _ in own + shared)

    def lines(found: list[tuple[str, str, str]]) -> str:
        return "\n".join(
            f"  {env:<{width}}  {help}" + (f" (default {default})" if default else "")
            for env, help, default in found
        )

    text = "every flag names its variable; a flag given wins over it.\n"
    if own:
        text += "read from the environment only:\n" + lines(own) + "\n"
    return text + "read by every service:\n" + lines(shared) + "\n(docs/deploy.md lists them all)"


def service_parser(
    cls: type, package: str, description: str | None = None
) -> argparse.ArgumentParser:
    """The parser of `python -m <package>`: the flags of `cls` and the shared variables."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {package}",
        description=description,
        epilog=epilog(cls),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flags(cls, parser)
    return parser


def load(
    cls: type[T],
    program: str,
    argv: Sequence[str] | None = None,
    *,
    description: str | None = None,
    check: Callable[[T], None] | None = None,
) -> T:
    """A service's settings from its command line and the environment; a bad value (or what
    `check` refuses) ends the process with one line and code 2, never a traceback."""
    package = f"tickwheel.services.{program}"
    args = service_parser(cls, package, description).parse_args(argv)
    try:
        settings = from_args(cls, args)
        if check is not None:
            check(settings)
    except TickwheelError as exc:
        print(f"tickwheel {program}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return settings


# The fields every service has, declared once here.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def instance_setting(default: str) -> Any:
    return setting(
        "TICKWHEEL_INSTANCE",
        Text(),
        default,
        "this instance's name: in logs, and the consumer's static membership",
    )


def bootstrap_setting() -> Any:
    return setting(
        "KAFKA_BOOTSTRAP_SERVERS",
        Text(),
        help="the Kafka cluster's bootstrap servers",
        flag="--bootstrap-servers",
        default_factory=bootstrap_servers,
        shown="the running local stack's, else 127.0.0.1:9092",
    )


def log_level_setting() -> Any:
    return setting("TICKWHEEL_LOG_LEVEL", Choice(LOG_LEVELS, fold=True), "INFO", "log level")


def metrics_port_setting() -> Any:
    return setting(
        "TICKWHEEL_METRICS_PORT",
        Whole(minimum=0),
        0,
        "port of the Prometheus metrics endpoint (/metrics); 0 = none",
    )


def metrics_addr_setting() -> Any:
    return setting(
        "TICKWHEEL_METRICS_ADDR", Text(), "127.0.0.1", "address the metrics endpoint binds to"
    )


def log_level(name: str) -> int:
    """The `logging` level of a `log_level` setting."""
    return int(getattr(logging, name))


def path(name: str, text: str) -> Path:
    """A path (for `Using`)."""
    return Path(text)
