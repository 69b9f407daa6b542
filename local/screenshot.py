"""Take docs/screenshot.png: the page in use (a few turns and a /past answer with its sources).

`python -m local.screenshot [--out docs/screenshot.png]` runs a throwaway local mode (temporary
DynamoDB Local and index, offline models), fills it through the API and photographs the page in
headless Chromium. Your own .local/ is not touched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from local.config import ROOT, apply_local_defaults
from local.dynamodb_local import free_port

GARDEN = [
    "My tomatoes have blight on the lower leaves.",
    "I removed the yellow leaves and now water at the base, in the morning.",
    "Next year I will plant basil and marigolds next to them.",
]
TRIP = [
    "I booked the night train to Lisbon for the conference in May.",
    "Remind me to pack the adapter for the projector.",
]
TODAY = [
    "I have a free afternoon on Saturday and want to work in the garden.",
    "/past what was wrong with my tomatoes?",
]


def _call(base: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        text = answer.read()
    return json.loads(text) if text else None


def _session(base: str, name: str, lines: list[str], *, end: bool) -> str:
    session_id = _call(base, "POST", "/sessions", {"name": name})["session"]["session_id"]
    for line in lines:
        _call(base, "POST", f"/sessions/{session_id}/messages", {"content": line})
    if end:
        _call(base, "POST", f"/sessions/{session_id}/end")
    return session_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png")
    args = parser.parse_args(argv)

    from playwright.sync_api import expect, sync_playwright

    from local.browser import launch_chromium
    from local.stack import LocalStack, StackOptions

    with tempfile.TemporaryDirectory(prefix="chatmemory-shot-") as tmp:
        state = Path(tmp)
        for key in ("DYNAMODB_ENDPOINT_URL", "MEMORY_PATH"):
            os.environ.pop(key, None)
        port = free_port()
        apply_local_defaults(dynamodb_port=port, state_dir=state)
        options = StackOptions(
            state_dir=state,
            api_port=0,
            dynamodb_port=port,
            sweep_seconds=0,
            poll_interval=0.1,
            warm_models=False,
        )
        with LocalStack(options, echo=lambda _: None) as stack:
            assert stack.gateway is not None and stack.poller is not None
            base = stack.gateway.url
            _session(base, "Garden", GARDEN, end=True)
            _session(base, "Trip to Lisbon", TRIP, end=True)
            stack.poller.stop()
            stack.poller.drain()
            today = _session(base, "Weekend plans", TODAY, end=False)
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                page = browser.new_page(
                    viewport={"width": 1280, "height": 800}, color_scheme="light"
                )
                page.add_init_script(f"localStorage.setItem('chatmemory.session', '{today}')")
                page.goto(base + "/")
                expect(page.locator("#messages .intent-badge")).to_have_text("recalled")
                expect(page.locator("#session-list .session")).to_have_count(3)
                page.get_by_label("Message").fill("/past what did I plan to plant next year?")
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
                browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
