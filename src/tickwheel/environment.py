"""Numbers read from environment variables. A bad value is refused with one line naming the
variable and what it accepts (an `InvalidInput`, which every entry point prints as such),
never a `ValueError` traceback from deep inside a service's settings."""

from __future__ import annotations

import os

from tickwheel.errors import InvalidInput


def env_seconds(name: str, default: float, *, zero_ok: bool = False) -> float:
    """Seconds in `name` (a decimal number above 0, or at least 0 with `zero_ok`), else
    `default` when it is unset or empty."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 if zero_ok else value > 0) or value == float("inf"):
        floor = "0 or more" if zero_ok else "above 0"
        raise InvalidInput(name, f"{text!r} is not a number of seconds {floor}, e.g. '30', '2.5'")
    return value


def env_ms(name: str, default_s: float, *, zero_ok: bool = True) -> int:
    """`env_seconds` as whole milliseconds (the unit the watchdog's rules count in)."""
    return int(env_seconds(name, default_s, zero_ok=zero_ok) * 1000)


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """The whole number in `name`, at least `minimum`, else `default` when unset or empty."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidInput(name, f"{text!r} is not a whole number of at least {minimum}")
    return value
