"""The web page when the connection is lost (headless Chromium against local mode): messages wait
in a localStorage outbox, shown as not sent, and go out in order with their client_message_id
when the connection returns, stored once; a reload reopens the conversation the page was in; a
message to a session that ended meanwhile continues in a new session instead of showing a 409."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.integration.helpers import World, page_outbox, page_problems

pytestmark = pytest.mark.integration

# POST /sessions/{id}/messages/stream: how the page sends a message.
SEND = re.compile(r"/sessions/[^/]+/messages/stream$")
UNSENT = "#messages > li.turn.unsent"


def open_page(browser: Any, world: World) -> tuple[Any, list[str]]:
    """The page in a fresh browser context, and the errors it logs. A refused or cut off request
    logs "Failed to load resource" in Chromium: that is the network, not the page."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems = page_problems(page)
    page.goto(world.url + "/")
    return page, problems


def stored(world: World, session_id: str) -> list[tuple[int, str, str]]:
    """The session's turns on the server: (turn, input, client_message_id)."""
    messages = world.api.ok("GET", f"/sessions/{session_id}/messages?limit=100")["messages"]
    return [(m["turn"], m["input"], m["client_message_id"]) for m in messages]


def send(page: Any, text: str) -> None:
    message = page.get_by_label("Message")
    message.fill(text)
    message.press("Enter")


def abort_sends(route: Any) -> None:
    if route.request.method == "POST":
        route.abort()
    else:
        route.fallback()


def test_messages_typed_offline_are_kept_shown_unsent_and_sent_in_order_once_when_back_online(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    page, problems = open_page(browser, running_world)
    page.get_by_role("button", name="+ New session").click()
    expect(page.get_by_label("Message")).to_be_enabled()
    [session] = running_world.api.ok("GET", "/sessions")["sessions"]
    session_id = session["session_id"]

    page.context.set_offline(True)
    first, second = "My lemon tree drops its leaves.", "It stands by a cold window."
    send(page, first)
    send(page, second)  # the composer stays open: messages queue
    unsent = page.locator(UNSENT)
    expect(unsent).to_have_count(2)
    expect(unsent.first.locator(".bubble.assistant")).to_have_text(
        re.compile("not sent yet — will retry")
    )
    kept = page_outbox(page)
    assert list(kept) == [session_id]
    assert [entry["content"] for entry in kept[session_id]] == [first, second]
    ids = [entry["client_message_id"] for entry in kept[session_id]]
    assert len(set(ids)) == 2 and all(ids)
    assert stored(running_world, session_id) == []

    page.context.set_offline(False)  # Chromium fires `online`: the outbox goes at once
    turns = page.locator("#messages > li.turn")
    expect(unsent).to_have_count(0, timeout=10_000)
    expect(page.locator(".outbox-state, .typing")).to_have_count(0)
    expect(turns.nth(0).locator(".turn-no")).to_have_text("#1")
    expect(turns.nth(0).locator(".bubble.user")).to_contain_text(first)
    expect(turns.nth(1).locator(".turn-no")).to_have_text("#2")
    expect(turns.nth(1).locator(".bubble.user")).to_contain_text(second)
    expect(turns.nth(1).locator(".bubble.assistant .text")).not_to_be_empty()
    assert page_outbox(page) == {}
    assert stored(running_world, session_id) == [(1, first, ids[0]), (2, second, ids[1])]
    assert problems == [], problems


def test_a_reload_reopens_the_conversation_it_was_in_and_then_sends_what_was_left_unsent(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    garden = running_world.api.new_session("Garden")
    kitchen = running_world.api.new_session("Kitchen")  # newer: the page would open it first
    page, problems = open_page(browser, running_world)
    expect(page.locator("#session-name")).to_have_text("Kitchen")
    page.locator("#session-list .session-open", has_text="Garden").click()
    expect(page.locator("#session-name")).to_have_text("Garden")
    send(page, "The roses need pruning.")
    turns = page.locator("#messages > li.turn")
    expect(turns.nth(0).locator(".turn-no")).to_have_text("#1")

    page.route(SEND, abort_sends)  # the API is out of reach for messages
    send(page, "And the hedge too.")
    expect(page.locator(UNSENT)).to_have_count(1)
    [entry] = page_outbox(page)[garden]

    page.reload()
    # The same conversation, with its stored turn and the message still waiting.
    expect(page.locator("#session-name")).to_have_text("Garden")
    expect(turns).to_have_count(2)
    expect(turns.nth(0).locator(".bubble.user")).to_contain_text("The roses need pruning.")
    expect(page.locator(UNSENT)).to_contain_text("And the hedge too.")
    expect(page.locator(UNSENT)).to_contain_text("not sent yet — will retry")
    assert page_outbox(page) == {garden: [entry]}

    page.unroute(SEND, abort_sends)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    expect(turns.nth(1).locator(".turn-no")).to_have_text("#2", timeout=10_000)
    expect(page.locator(UNSENT)).to_have_count(0)
    assert page_outbox(page) == {}
    turns_stored = stored(running_world, garden)
    assert [(turn, text) for turn, text, _ in turns_stored] == [
        (1, "The roses need pruning."),
        (2, "And the hedge too."),
    ]
    assert turns_stored[1][2] == entry["client_message_id"]  # the id it was kept with
    assert stored(running_world, kitchen) == []
    assert problems == [], problems


def test_a_message_whose_answer_was_lost_is_retried_with_its_id_and_stored_once(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    session_id = running_world.api.new_session("Lost answers")
    page, problems = open_page(browser, running_world)
    expect(page.locator("#session-name")).to_have_text("Lost answers")
    bodies: list[dict[str, Any]] = []

    def lose_the_first_answer(route: Any) -> None:
        if route.request.method != "POST":
            route.fallback()
            return
        bodies.append(json.loads(route.request.post_data))
        if len(bodies) == 1:
            route.fetch()  # the API stores the turn...
            route.abort()  # ...and the page never hears back
        else:
            route.continue_()

    page.route(SEND, lose_the_first_answer)
    send(page, "Did this arrive?")
    # No `online` event here (the browser never went offline): the backoff timer retries.
    turn = page.locator("#messages > li.turn")
    expect(turn.locator(".turn-no")).to_have_text("#1", timeout=15_000)
    expect(turn.locator(".bubble.assistant .text")).not_to_be_empty()
    expect(page.locator(UNSENT)).to_have_count(0)
    assert len(bodies) == 2
    assert bodies[0]["client_message_id"] == bodies[1]["client_message_id"]
    assert stored(running_world, session_id) == [
        (1, "Did this arrive?", bodies[0]["client_message_id"])
    ]
    assert page_outbox(page) == {}
    assert problems == [], problems


def test_a_message_to_a_session_that_ended_meanwhile_continues_in_a_new_session_without_an_error(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    ended = running_world.api.new_session("Trip to Porto")
    running_world.api.say(ended, "We fly on Friday.")
    page, problems = open_page(browser, running_world)
    expect(page.locator("#session-name")).to_have_text("Trip to Porto")
    expect(page.locator("#messages > li.turn")).to_have_count(1)
    running_world.api.end(ended)  # as the idle sweeper does; the page still shows it open

    send(page, "Which day do we fly?")
    toast = page.locator("#toast")
    expect(toast).to_contain_text("That conversation had ended; continuing in a new one.")
    expect(toast).to_have_class(re.compile(r"\binfo\b"))
    expect(toast).to_have_attribute("role", "status")
    expect(page.locator("#session-list .session")).to_have_count(2)
    turns = page.locator("#messages > li.turn")
    expect(turns).to_have_count(1)
    expect(turns.locator(".turn-no")).to_have_text("#1")
    expect(turns.locator(".bubble.user")).to_contain_text("Which day do we fly?")
    expect(turns.locator(".bubble.assistant .text")).not_to_be_empty()
    expect(page.locator("#session-name")).to_have_text("Trip to Porto")  # the name carries over
    expect(page.locator("#session-status")).to_have_text("open")
    expect(page.locator(".error-text")).to_have_count(0)
    expect(toast).not_to_contain_text("409")

    sessions = running_world.api.ok("GET", "/sessions")["sessions"]
    [new] = [s for s in sessions if s["session_id"] != ended]
    assert new["continued_from"] == ended
    assert [m[1] for m in stored(running_world, new["session_id"])] == ["Which day do we fly?"]
    assert [m[1] for m in stored(running_world, ended)] == ["We fly on Friday."]
    assert page_outbox(page) == {}
    remembered = page.evaluate(
        "Object.keys(localStorage).filter((k) => k.startsWith('chatmemory.session|'))"
        ".map((k) => localStorage.getItem(k))"
    )
    assert remembered == [new["session_id"]]
    assert problems == [], problems
