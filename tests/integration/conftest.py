"""Integration tier: a real DynamoDB Local (started once per test run, on a free port, with a
temporary database), fresh tables per test, and local mode's gateway and poller around the real
handlers with the offline models. The fixtures (`dynamodb_local`, `world`, `running_world`) live
in tests/conftest.py, shared with the fault tier (tests/faults); the web page tests' `browser`
lives here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scripts.browser import find_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright, one per test module (the web page tests);
    skips without one."""
    if find_browser() is None:
        pytest.skip("no Chromium found: `sudo apt-get install chromium` or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    from local.browser import launch_chromium

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()
