"""The API process: settings, uvicorn, and a bounded stop on SIGTERM (decision 0050)."""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from dataclasses import dataclass, field

from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import (
    KAFKA_BUDGET_S,
    ShutdownDeadline,
    exit_now,
    exit_on_fatal_in_threads,
    stop_on_signals,
)
from tickwheel.services.api.door import auth_mode
from tickwheel.services.environment import service_parser

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


def _choice(name: str, accepted: tuple[str, ...]) -> str:
    value = os.environ.get(name, "auto")
    if value not in accepted:
        raise InvalidInput(name, f"{value!r}; accepted: {', '.join(accepted)}")
    return value


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InvalidInput("TICKWHEEL_API_PORT", f"{text!r}; accepted: a port from 1 to 65535")
    return int(text)


@dataclass
class ApiSettings:
    """Environment: TICKWHEEL_API_HOST (default 127.0.0.1), TICKWHEEL_API_PORT (default 8780),
    TICKWHEEL_API_AUTH (`keys`, the default, or `off`: the development mode without keys,
    refused unless the host is loopback), TICKWHEEL_API_HTTP (`auto`, `httptools`, `h11`) and
    TICKWHEEL_API_LOOP (`auto`, `uvloop`, `asyncio`): uvicorn's parser and event loop,
    KAFKA_BOOTSTRAP_SERVERS."""

    instance: str = "api"
    host: str = field(default_factory=lambda: os.environ.get("TICKWHEEL_API_HOST", DEFAULT_HOST))
    port: int = field(
        default_factory=lambda: _port(os.environ.get("TICKWHEEL_API_PORT", str(DEFAULT_PORT)))
    )
    http: str = field(default_factory=lambda: _choice("TICKWHEEL_API_HTTP", HTTP_PARSERS))
    loop: str = field(default_factory=lambda: _choice("TICKWHEEL_API_LOOP", EVENT_LOOPS))


def _parse(argv: list[str] | None) -> ApiSettings:
    parser = service_parser("tickwheel.services.api")
    parser.add_argument("--instance", default=os.environ.get("TICKWHEEL_INSTANCE", "api"))
    parser.add_argument("--host", help="address to listen on (TICKWHEEL_API_HOST; 127.0.0.1)")
    parser.add_argument("--port", help="port to listen on (TICKWHEEL_API_PORT; 8780)")
    # TICKWHEEL_API_AUTH=off (loopback only) serves without keys: see docs/api.md.
    args = parser.parse_args(argv)
    settings = ApiSettings(instance=args.instance)
    if args.host:
        settings.host = args.host
    if args.port:
        settings.port = _port(args.port)
    if auth_mode() == "off" and not _loopback(settings.host):
        raise InvalidInput(
            "TICKWHEEL_API_AUTH",
            f"off with host {settings.host!r}; accepted: off only on a loopback host "
            "(127.0.0.1, ::1, localhost), else keys",
        )
    return settings


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))
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
        settings = _parse(argv)
        from tickwheel.services.api.app import create_app

        app = create_app()
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
