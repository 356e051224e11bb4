"""Driving Debian's Chromium with Playwright for the console's browser tests.

Never `playwright install` (it downloads browsers from outside the package registries): the
browser is `/usr/bin/chromium` from apt, which `.ci/run` installs. Every page is watched: a
request leaving loopback is aborted and recorded, and every console error or uncaught page
error is recorded, so a test can fail on either.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
# Tests must not rewrite tracked files: their screenshots go under .tickwheel/ (ignored) unless
# TICKWHEEL_SCREENSHOTS_DIR names a folder — `bench/reports/console/` when refreshing the report's.
SCREENSHOTS = Path(
    os.environ.get("TICKWHEEL_SCREENSHOTS_DIR")
    or Path(__file__).resolve().parents[2] / ".tickwheel" / "screenshots"
)


@contextmanager
def playwright() -> Iterator[Any]:
    """Playwright's driver: one per test module (a second one inside it would refuse to start,
    as its sync API runs its own event loop)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@contextmanager
def chromium(driver: Any, javascript: bool = True) -> Iterator[Any]:
    """A headless Debian Chromium with a fresh profile (JavaScript off if asked), closed on
    exit."""
    with tempfile.TemporaryDirectory(prefix="tickwheel-chromium-") as profile:
        context = driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, java_script_enabled=javascript,
            args=ARGS, viewport={"width": 1400, "height": 1000},
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()


@dataclass
class Watch:
    """What a page did that a console page must never do."""

    external: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.external == [], f"requests outside loopback: {self.external}"
        assert self.errors == [], f"console errors: {self.errors}"


def watched_page(context: Any) -> tuple[Any, Watch]:
    """A new page whose every request and console message is checked."""
    watch = Watch()
    page = context.new_page()

    def route(route: Any) -> None:
        url = route.request.url
        host = urlsplit(url).hostname or ""
        if url.startswith(("data:", "blob:", "about:")) or host in LOOPBACK:
            route.continue_()
        else:
            watch.external.append(url)
            route.abort()

    page.route("**/*", route)
    page.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watch.errors.append(str(e)))
    return page, watch


def screenshot(page: Any, name: str) -> Path:
    """A full-page screenshot for a reviewer to look at (see SCREENSHOTS for where)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
