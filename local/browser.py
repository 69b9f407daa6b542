"""Headless Chromium for the page's browser test and screenshot: Debian's `chromium` package
driven by Playwright (nothing here can download a browser, so `playwright install` is not used)."""

from __future__ import annotations

from typing import Any

from scripts.browser import find_browser

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)


def launch_chromium(playwright: Any) -> Any:
    """A headless Chromium from the system; raises FileNotFoundError when there is none."""
    path = find_browser()
    if path is None:
        raise FileNotFoundError(
            "no Chromium found: install it (`sudo apt-get install chromium`) or set CHROMIUM_PATH"
        )
    return playwright.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS))
