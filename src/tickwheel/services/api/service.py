"""The API process: settings, uvicorn, and a bounded stop on SIGTERM (decision 0050)."""

from __future__ import annotations

import ipaddress
import logging
import sys
from dataclasses import dataclass

from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import (
    KAFKA_BUDGET_S,
    ShutdownDeadline,
    exit_now,
    exit_on_fatal_in_threads,
    stop_on_signals,
)
from tickwheel.services.api.freshness import window_from_env
from tickwheel.services.api.limits import RateSettings
from tickwheel.services.environment import (
    Choice,
    Port,
    Positive,
    Text,
    Using,
    Var,
    bootstrap_setting,
    group,
    instance_setting,
    load,
    log_level,
    log_level_setting,
    setting,
    var,
)

log = logging.getLogger("tickwheel.api")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
# In-flight requests get this long to finish once a stop begins; the deadline covers the rest.
GRACE_S = 3


# uvicorn's "auto" takes httptools and uvloop when installed (they are dependencies: a no-op
# request costs the server about half what it does under h11 and the stdlib loop, decision
# 0167); the pure-Python pair stays selectable for an A/B run and as a fallback.
HTTP_PARSERS = ("auto", "httptools", "h11")
EVENT_LOOPS = ("auto", "uvloop", "asyncio")
AUTH_MODES = ("keys", "off")


def _rates(
    reads_per_s: float, read_burst: float, writes_per_s: float, write_burst: float
) -> RateSettings:
    return RateSettings(reads_per_s, read_burst, writes_per_s, write_burst)


def _rate(env: str, default: float, help: str) -> Var:
    return var(
        env,
        Positive(),
        default,
        help,
        flag="--" + env.removeprefix("TICKWHEEL_API_").lower().replace("_", "-"),
    )


def _window(name: str, text: str) -> int:
    return int(window_from_env({name: text}) * 1000)


@dataclass(frozen=True)
class ApiSettings:
    """How the API process runs, declared once (decision 0215); `from_env(ApiSettings)` reads
    the environment."""

    instance: str = instance_setting("api")
    bootstrap: str = bootstrap_setting()
    host: str = setting("TICKWHEEL_API_HOST", Text(), DEFAULT_HOST, "address to listen on")
    port: int = setting("TICKWHEEL_API_PORT", Port(), DEFAULT_PORT, "port to listen on")
    auth: str = setting(
        "TICKWHEEL_API_AUTH",
        Choice(AUTH_MODES),
        "keys",
        "keys, or off: the development mode without keys, refused unless the host is loopback "
        "(docs/api.md)",
    )
    http: str = setting("TICKWHEEL_API_HTTP", Choice(HTTP_PARSERS), "auto", "uvicorn's HTTP parser")
    loop: str = setting("TICKWHEEL_API_LOOP", Choice(EVENT_LOOPS), "auto", "uvicorn's event loop")
    # `group` returns a dataclasses.field whose RateSettings are made for each instance.
    rates: RateSettings = group(  # noqa: RUF009
        _rates,
        reads_per_s=_rate("TICKWHEEL_API_READS_PER_S", 500.0, "reads per second per tenant"),
        read_burst=_rate("TICKWHEEL_API_READ_BURST", 1000.0, "a tenant's burst of reads"),
        writes_per_s=_rate("TICKWHEEL_API_WRITES_PER_S", 200.0, "writes per second per tenant"),
        write_burst=_rate("TICKWHEEL_API_WRITE_BURST", 400.0, "a tenant's burst of writes"),
    )
    log_level: str = log_level_setting()
    # Read where they are used (the followed catalogue, the console); declared here so that they
    # are checked at start-up and documented with the rest.
    read_window_ms: int = setting(
        "TICKWHEEL_API_READ_WINDOW_MS",
        Using(_window),
        1000,
        "how stale a read may be before it waits for the end offsets, ms (0 to 10000)",
        flag=None,
    )
    history_group: str = setting(
        "TICKWHEEL_HISTORY_GROUP",
        Text(),
        "",
        "the history sink's group, whose lag the console shows",
        flag=None,
        shown="<prefix>tickwheel-history",
    )
    timer_group: str = setting(
        "TICKWHEEL_TIMER_GROUP",
        Text(),
        "",
        "the timers' group, whose lag the console shows",
        flag=None,
        shown="<prefix>tickwheel-timer",
    )


def _check(settings: ApiSettings) -> None:
    if settings.auth == "off" and not _loopback(settings.host):
        raise InvalidInput(
            "TICKWHEEL_API_AUTH",
            f"off with host {settings.host!r}; accepted: off only on a loopback host "
            "(127.0.0.1, ::1, localhost), else keys",
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    settings = load(ApiSettings, "api", argv, description="The tickwheel HTTP API.", check=_check)
    configure_logging(log_level(settings.log_level))
    deadline = ShutdownDeadline(log, "api")
    servers: list[uvicorn.Server] = []

    def stop() -> None:
        log.info("stopping", extra={"action": "api_stopping"})
        deadline.exit_code = 0
        deadline.arm(GRACE_S + KAFKA_BUDGET_S)
        if servers:
            servers[0].should_exit = True
        else:
            exit_now(0)

    # Before any Kafka client exists: their threads inherit the blocked signals.
    stop_on_signals(stop)
    exit_on_fatal_in_threads(log, "api")  # a follower's dead client ends the process (0200)
    try:
        from tickwheel.services.api.app import create_app
        from tickwheel.services.api.backend import Backend
        from tickwheel.services.api.door import Door

        backend = Backend.from_env(settings.bootstrap)
        door = Door.open(
            settings.bootstrap, backend.clock.now, mode=settings.auth, rates=settings.rates
        )
        app = create_app(backend, door)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            http=settings.http,
            loop=settings.loop,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=GRACE_S,
        )
        server = uvicorn.Server(config)
        servers.append(server)
        log.info(
            "listening",
            extra={"action": "api_listening", "host": settings.host, "port": settings.port},
        )
        server.run()
        app.state.door.close()
        code = 0 if server.started else 1
    except TickwheelError as exc:
        print(f"tickwheel api: error: {exc}", file=sys.stderr)
        code = 2
    except Exception:
        log.exception("api crashed", extra={"action": "api_crashed"})
        code = 1
    exit_now(code)
