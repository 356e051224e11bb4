"""Numbers read from environment variables. A bad value is refused with one line naming the
variable and what it accepts (an `InvalidInput`, which every entry point prints as such),
never a `ValueError` traceback from deep inside a service's settings."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from tickwheel.errors import InvalidInput


def _set(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The variable's text, stripped; "" when it is unset or empty (the default applies)."""
    return (os.environ if environ is None else environ).get(name, "").strip()


def env_seconds(name: str, default: float, *, zero_ok: bool = False) -> float:
    """Seconds in `name` (a finite decimal number above 0, or at least 0 with `zero_ok`),
    else `default` when it is unset or empty."""
    if not (text := _set(name)):
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
        floor = "0 or more" if zero_ok else "above 0"
        raise InvalidInput(name, f"{text!r} is not a number of seconds {floor}, e.g. '30', '2.5'")
    return value


def env_ms(name: str, default_s: float, *, zero_ok: bool = True) -> int:
    """`env_seconds` as whole milliseconds. Unlike `env_seconds`, 0 is accepted unless
    `zero_ok=False`: this reads the watchdog's thresholds, where 0 removes a slack or turns
    a check off (the timer's callers say `zero_ok=False`)."""
    return int(env_seconds(name, default_s, zero_ok=zero_ok) * 1000)


def env_int(
    name: str, default: int, minimum: int = 1, *, environ: Mapping[str, str] | None = None
) -> int:
    """The whole number in `name`, at least `minimum`, else `default` when unset or empty.
    `environ` stands in for `os.environ` where settings are built from a given mapping."""
    if not (text := _set(name, environ)):
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidInput(name, f"{text!r} is not a whole number of at least {minimum}")
    return value
