"""Stacked messages in the web page (headless Chromium against local mode with two handler
processes and STACK_WAIT_MS=3000): a second message typed while the first waits for its answer
is sent at once (not after that answer), the two get one answer, shown once under the second
message, and the first says it was answered together with the next one; a reload shows the same.

The order of events is fixed by what the test observes: the second message is typed once the API
lists the first one stored and waiting, and the second request's answer is held back from the page
until the page has shown the answer the first request brought (its `answer`), so the live answer
is the first request's, whatever the timing."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World, page_outbox, stacking_local_world

pytestmark = pytest.mark.integration

# POST /sessions/{id}/messages/stream: how the page sends a message.
SEND = re.compile(r"/sessions/[^/]+/messages/stream$")
FIRST, SECOND = "My parcel never arrived.", "The order number is 1234."
NOTE = "Answered together with your next message"


@pytest.fixture
def stacking_world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    yield from stacking_local_world(dynamodb_local, tmp_path, monkeypatch)


def open_page(browser: Any, world: World) -> tuple[Any, list[str]]:
    """The page in a fresh browser context, and the errors it logs."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto(world.url + "/")
    return page, problems


def send(page: Any, text: str) -> None:
    message = page.get_by_label("Message")
    message.fill(text)
    message.press("Enter")


def messages(world: World, session_id: str) -> list[dict[str, Any]]:
    return world.api.ok("GET", f"/sessions/{session_id}/messages?limit=50")["messages"]


def expect_stacked(page: Any, answer: str) -> None:
    """Two messages, one answer under the second, the first noted as answered with it."""
    from playwright.sync_api import expect

    turns = page.locator("#messages > li.turn")
    expect(turns).to_have_count(2)
    first, second = turns.nth(0), turns.nth(1)
    expect(first.locator(".turn-no")).to_have_text("#1")
    expect(first.locator(".bubble.user")).to_contain_text(FIRST)
    expect(first.locator(".stacked-note")).to_have_text(NOTE)
    expect(first.locator(".bubble.assistant")).to_have_count(0)
    expect(first.get_by_role("button", name="Good answer")).to_have_count(0)
    expect(second.locator(".turn-no")).to_have_text("#2")
    expect(second.locator(".bubble.user")).to_contain_text(SECOND)
    expect(second.locator(".bubble.assistant .text")).to_have_text(answer)
    expect(second.locator(".stack-span")).to_have_text("One answer to your messages #1 and #2")
    expect(second.get_by_role("button", name="Good answer")).to_be_visible()
    expect(page.locator("#messages .bubble.assistant")).to_have_count(1)
    expect(page.locator(".typing, .outbox-state, .error-text")).to_have_count(0)


def test_two_quick_messages_show_one_answer_under_the_second_live_and_after_a_reload(
    browser: Any, stacking_world: World
) -> None:
    from playwright.sync_api import expect

    world = stacking_world
    page, problems = open_page(browser, world)
    page.get_by_role("button", name="+ New session").click()
    expect(page.get_by_label("Message")).to_be_enabled()
    session_id = page.evaluate("state.current.session_id")

    # What the page sent and heard, in order; the second request's answer is held back.
    events: list[tuple[str, str]] = []
    held: list[tuple[Any, Any]] = []

    def content(request: Any) -> str:
        return str(json.loads(request.post_data or "{}").get("content", ""))

    def on_send(route: Any) -> None:
        if route.request.method == "POST" and content(route.request) == SECOND:
            held.append((route, route.fetch(timeout=90_000)))  # the API answers it...
        else:
            route.fallback()

    page.on(
        "request",
        lambda r: (
            events.append(("sent", content(r)))
            if r.method == "POST" and SEND.search(r.url)
            else None
        ),
    )
    page.on(  # the whole answer heard (a streamed answer's headers come at once)
        "requestfinished",
        lambda r: (
            events.append(("answered", content(r)))
            if r.method == "POST" and SEND.search(r.url)
            else None
        ),
    )
    page.route(SEND, on_send)

    send(page, FIRST)
    deadline = time.monotonic() + 30
    while not messages(world, session_id):  # stored, waiting for its answer (3 s at least)
        assert time.monotonic() < deadline, "the first message was never stored"
        time.sleep(0.05)
    [waiting] = messages(world, session_id)
    assert waiting["pending"] and waiting["response"] is None

    send(page, SECOND)
    # Both on their way: the second did not wait for the first one's answer.
    expect(page.locator("#messages .typing")).to_have_count(2)

    # The first request's answer brings the answer (...while the page has not heard the second's).
    turns = page.locator("#messages > li.turn")
    expect(turns.nth(0).locator(".stacked-note")).to_have_text(NOTE, timeout=60_000)
    assert ("answered", SECOND) not in events
    stored = messages(world, session_id)
    assert [(m["turn"], m["pending"], m.get("answered_by")) for m in stored] == [
        (1, False, 2),
        (2, False, None),
    ]
    assert stored[0]["response"] is None and stored[1]["response"]
    answer = stored[1]["response"]
    expect_stacked(page, answer)
    assert events.index(("sent", SECOND)) < events.index(("answered", FIRST))
    assert page_outbox(page) == {}

    # The second request's own answer changes nothing on the page.
    deadline = time.monotonic() + 60
    while not held:
        assert time.monotonic() < deadline, "the second message's request never came back"
        page.wait_for_timeout(50)
    [(route, response)] = held
    route.fulfill(response=response)
    expect(page.locator("#messages .bubble.assistant")).to_have_count(1)
    page.wait_for_function("() => !state.flushing.size")
    assert ("answered", SECOND) in events
    expect_stacked(page, answer)

    # A reload shows the conversation as GET .../messages lists it: the same.
    page.reload()
    expect(page.locator("#session-name")).not_to_have_text("No session selected")
    expect_stacked(page, answer)
    assert page_outbox(page) == {}
    assert len(messages(world, session_id)) == 2
    assert problems == [], problems
