"""The web page reads answers from the stream route (POST …/messages/stream) as the model writes
them: the first words are on screen while the model is still held before its end, and Stop ends
an answer that would go on forever, which is stored marked stopped and shown as such. Local
mode's text model is a stand-in OpenAI-compatible server (TEXT_BACKEND=openai) that the test
holds between pieces."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.integration.helpers import World, page_problems
from tests.openai_stream import answer, endless, stand_in_model

pytestmark = pytest.mark.integration


def test_the_page_shows_the_answer_as_it_is_written_and_stop_keeps_what_was_shown(
    browser: Any, running_world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    held = threading.Event()
    with stand_in_model(monkeypatch) as model:
        model.streams.append(answer(["Tomatoes ", "need ", held, "full ", "sun."]))
        model.streams.append(endless(["Basil ", "likes ", "warmth "]))
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        problems = page_problems(page)
        page.goto(running_world.url + "/")
        page.get_by_role("button", name="+ New session").click()
        expect(page.locator("#session-name")).to_contain_text("Session ")
        message = page.get_by_label("Message")
        message.fill("How do I grow tomatoes?")
        message.press("Enter")
        turns = page.locator("#messages > li.turn")
        first = turns.nth(0).locator(".bubble.assistant")
        # The model holds its answer after two words: they are on screen all the same.
        expect(first.locator(".text")).to_have_text("Tomatoes need", timeout=30_000)
        expect(first.get_by_role("button", name="Stop")).to_be_visible()
        assert not held.is_set()
        held.set()
        expect(first.locator(".text")).to_have_text("Tomatoes need full sun.")
        expect(turns.nth(0).locator(".turn-no")).to_have_text("#1")
        expect(first.get_by_role("button", name="Stop")).to_have_count(0)
        expect(first.locator(".stopped-note")).to_have_count(0)

        # An answer without end: Stop ends it; what was shown is stored, marked stopped.
        message.fill("And basil?")
        message.press("Enter")
        second = turns.nth(1).locator(".bubble.assistant")
        expect(second.locator(".text")).to_contain_text("Basil likes warmth more")
        second.get_by_role("button", name="Stop").click()
        expect(second.locator(".stopped-note")).to_have_text("Stopped")
        expect(second.get_by_role("button", name="Stop")).to_have_count(0)
        # The stored turn is read back in its place.
        expect(turns.nth(1).locator(".turn-no")).to_have_text("#2", timeout=15_000)
        session_id = page.evaluate("state.current.session_id")
        stored = running_world.api.ok("GET", f"/sessions/{session_id}/turns/2", user="local-user")
        assert stored["turn"]["stopped"] is True
        assert stored["turn"]["response"].startswith("Basil likes warmth more")
        expect(second.locator(".text")).to_have_text(stored["turn"]["response"])
        expect(second.locator(".stopped-note")).to_have_text("Stopped")
        # Reloaded, the page shows it stopped too.
        page.reload()
        expect(turns.nth(1).locator(".stopped-note")).to_have_text("Stopped")
    assert problems == [], problems
