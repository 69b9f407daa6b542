"""The web page in headless Chromium, against local mode (gateway + poller thread + DynamoDB
Local): create a session, chat, end it, see it consolidated, recall it from a new session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scripts.browser import find_browser
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if find_browser() is None:
        pytest.skip("no Chromium found: `sudo apt-get install chromium` or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    from local.browser import launch_chromium

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


def test_the_page_chats_ends_a_session_and_recalls_it_with_its_source(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto(running_world.url + "/")
    expect(page.get_by_role("heading", name="A chatbot that remembers")).to_be_visible()

    page.get_by_role("button", name="+ New session").click()
    name = page.locator("#session-name")
    expect(name).to_contain_text("Session ")
    first_name = name.inner_text()
    message = page.get_by_label("Message")
    for text in ("My tomatoes have blight on the lower leaves.", "I planted basil next to them."):
        message.fill(text)
        message.press("Enter")  # Enter sends
    turns = page.locator("#messages > li.turn")
    expect(turns).to_have_count(2)
    expect(page.locator(".typing")).to_have_count(0)
    expect(turns.nth(1).locator(".turn-no")).to_have_text("#2")
    expect(page.locator("#session-list .session")).to_have_count(1)

    page.get_by_role("button", name="End session").click()
    # Pending while the poller consolidates, then done (the page polls the session).
    expect(page.locator("#session-status")).to_have_text("remembered", timeout=30_000)
    expect(page.get_by_role("status")).to_contain_text("Saved to long-term memory")
    expect(message).to_be_disabled()

    page.get_by_role("button", name="Start a new session").click()
    expect(page.locator("#session-status")).to_have_text("open")
    message.fill("/past what was wrong with my tomatoes?")
    page.get_by_role("button", name="Send").click()
    answer = turns.nth(0).locator(".bubble.assistant")
    expect(answer.locator(".intent-badge")).to_have_text("recalled")
    expect(answer).to_contain_text("blight")
    expect(answer.locator(".sources summary")).to_have_text("Sessions used (1)")
    expect(answer.locator(".source .link")).to_have_text(first_name)

    # The search box over long-term memory finds the same session.
    page.get_by_label("Search long-term memory").fill("tomato leaves")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-list .memory-title").first).to_have_text(first_name)

    # Deleting the first session (after confirming) removes it from the list and from memory.
    page.once("dialog", lambda dialog: dialog.accept())
    remembered = page.locator("#session-list .session", has_text="remembered")
    remembered.get_by_role("button", name=f"Delete session {first_name}").click()
    expect(page.locator("#session-list .session")).to_have_count(1)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-list")).to_contain_text("Nothing remembered about that yet")

    # A readable error from the API's error envelope (a too long message is refused).
    page.evaluate("document.getElementById('message').removeAttribute('maxlength')")
    message.fill("y" * 5000)
    message.press("Enter")
    expect(page.locator("#toast")).to_contain_text("HTTP 413")

    # Settings: another local user (X-User-Id) sees none of it; Enter saves.
    page.get_by_role("button", name="Settings").click()
    page.get_by_label("User (local mode only)").fill("bob")
    page.get_by_label("User (local mode only)").press("Enter")
    expect(page.locator("#connection")).to_have_text("local API · user bob")
    expect(page.locator("#session-list")).to_have_text("No sessions yet.")
    # Nothing failed in the page but the refused message.
    assert problems == [] or all("413" in p for p in problems), problems
