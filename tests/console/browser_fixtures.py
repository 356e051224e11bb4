"""The Playwright fixtures every console browser test shares, and the check that Debian's
Chromium is there. A test module loads them as a plugin,
`pytest_plugins = ["tests.console.browser_fixtures"]`, and asks for `driver` (one Playwright
driver for the module) and, where one Chromium serves the whole module, `browser`. A plugin's
fixtures are seen by every test of the session once one module has loaded it, so no other
fixture may take these two names.

Loading it with no `chromium` on the PATH fails that test module's collection: a missing
browser is a failure, not a skip (`make setup` and `.ci/run` install it, never
`playwright install`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser import chromium, playwright

if shutil.which("chromium") is None:
    pytest.fail(
        "Debian's chromium is not installed: run `make setup` (or apt-get install chromium)",
        pytrace=False,
    )


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Playwright's driver, one per test module (`browser.playwright`)."""
    with playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(driver: Any) -> Iterator[Any]:
    """One headless Chromium with JavaScript on, shared by the module's tests."""
    with chromium(driver) as context:
        yield context
