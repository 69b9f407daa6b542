"""The web page's hand-off to a person (headless Chromium against local mode): a user asks for a
person, an agent finds the session in the agent desk's queue (?view=agent, local mode's agent
`agent`), reads the conversation with its sentiment markers and replies; the user sees the reply
labelled as an agent's, polled only while the session is with a person and the page is seen; the
agent hands back and the bot answers the user's next message. The /human command does what the
button does, and someone who is not an agent gets the desk's 403 explained.

The pages run on Playwright's fake clock: each poll happens when the test moves the clock on, so
"no poll while hidden" and "no poll after the hand-back" are counted, not waited for."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from tests.integration.helpers import World, page_problems

pytestmark = pytest.mark.integration

POLL_MS = 3000  # the page's HANDOFF_POLL_MS and AGENT_POLL_MS
# Counts the page's polls of a handed-off conversation (GET .../messages?order=desc) as they
# start, so that a test reads the number without waiting for the network.
COUNT_POLLS = """
window.__polls = 0;
const fetchOriginal = window.fetch;
window.fetch = (...args) => {
  if (String(args[0]).includes("/messages?order=desc")) window.__polls += 1;
  return fetchOriginal(...args);
};
"""
SET_VISIBILITY = """(visible) => {
  Object.defineProperty(document, "visibilityState", {
    value: visible ? "visible" : "hidden", configurable: true,
  });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def open_page(browser: Any, world: World, path: str = "/") -> tuple[Any, list[str]]:
    """The page in a fresh browser context on a fake clock, and the errors it logs (a refused
    request logs "Failed to load resource" in Chromium: that is the API's answer, not the page)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems = page_problems(page)
    # Paused from the start: the page's timers fire only when the test runs the clock.
    now = datetime.datetime.now()
    page.clock.install(time=now)
    page.clock.pause_at(now + datetime.timedelta(seconds=10))
    page.add_init_script(COUNT_POLLS)
    page.goto(world.url + path)
    return page, problems


def send(page: Any, text: str) -> None:
    message = page.get_by_label("Message")
    message.fill(text)
    message.press("Enter")


def polls(page: Any) -> int:
    return int(page.evaluate("window.__polls"))


def poll_once(page: Any) -> None:
    """Move the user's clock to the next poll and wait until that poll is done (the next one is
    then scheduled, or not)."""
    page.clock.run_for(POLL_MS)
    page.wait_for_function("() => !handoffPoll.busy")


def test_a_user_talks_to_a_person_who_replies_and_hands_back_then_the_bot_answers_again(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    user, user_problems = open_page(browser, running_world)
    desk, desk_problems = open_page(browser, running_world, "/?view=agent")
    expect(desk.locator("#connection")).to_have_text("local API · agent agent")
    expect(desk.get_by_role("link", name="Agent desk")).to_have_attribute("aria-current", "page")
    waiting = desk.locator("#queue-waiting")
    expect(waiting).to_have_text("No one is waiting.")

    # An ordinary turn first: the bot answers it.
    user.get_by_role("button", name="+ New session").click()
    expect(user.get_by_label("Message")).to_be_enabled()
    send(user, "This is terrible, my parcel is lost and nobody helps me!")
    turns = user.locator("#messages > li.turn")
    expect(turns.nth(0).locator(".turn-no")).to_have_text("#1", timeout=60_000)
    expect(turns.nth(0).locator(".bubble.assistant .text")).not_to_be_empty()
    session_id = user.evaluate("state.current.session_id")
    name = running_world.api.ok("GET", f"/sessions/{session_id}")["session"]["name"]

    # The user asks for a person: a banner says one is awaited, and nothing is answered.
    banner = user.locator("#status-banner")
    user.get_by_role("button", name="Talk to a person").click()
    expect(banner).to_contain_text("Waiting for a person…")
    expect(user.get_by_role("button", name="Talk to a person")).to_be_hidden()
    send(user, "Is anyone there?")
    expect(turns.nth(1).locator(".turn-no")).to_have_text("#2")
    expect(turns.nth(1).locator(".for-agent-note")).to_have_text("Sent to a person")
    expect(turns.nth(1).locator(".bubble.assistant")).to_have_count(0)
    kept = running_world.api.ok("GET", f"/sessions/{session_id}/messages")["messages"][1]
    assert (kept["input"], kept["response"], kept["for_agent"]) == ("Is anyone there?", None, True)

    # The desk polls its queue: the session waits there, and opens with the whole conversation.
    desk.clock.run_for(POLL_MS)
    expect(waiting.locator(".session-label")).to_have_text(name)
    expect(waiting).to_contain_text("the user asked for a person")
    waiting.get_by_role("button", name=re.compile(re.escape(name))).click()
    expect(desk.locator("#agent-session-name")).to_have_text(name)
    conversation = desk.locator("#agent-messages > li.turn")
    expect(conversation).to_have_count(2)
    expect(conversation.nth(0).locator(".bubble.user .sentiment")).to_have_text("negative")
    expect(conversation.nth(0).locator(".bubble.assistant .role-label")).to_have_text("Bot")
    expect(conversation.nth(1).locator(".bubble.user")).to_contain_text("Is anyone there?")
    expect(conversation.nth(1).locator(".for-agent-note")).to_be_visible()
    expect(desk.locator("#agent-session-meta")).to_contain_text("1 negative")

    # The agent replies: the session is answered by an agent now.
    reply = desk.get_by_label("Reply as agent")
    expect(reply).to_be_focused()
    reply.fill("Hello, I am looking for your parcel right now.")
    reply.press("Enter")
    expect(conversation).to_have_count(3)
    expect(conversation.nth(2).locator(".bubble.agent .role-label")).to_have_text("Agent")
    expect(desk.locator("#agent-session-state")).to_have_text("answered")
    expect(waiting).to_have_text("No one is waiting.")
    expect(desk.locator("#queue-active .session-label")).to_have_text(name)
    expect(reply).to_have_value("")

    # The user's page polls while the session is with a person: the reply shows as an agent's.
    before = polls(user)
    poll_once(user)
    answer = turns.nth(2).locator(".bubble.agent")
    expect(answer.locator(".role-label")).to_have_text("Agent")
    expect(answer).to_contain_text("Hello, I am looking for your parcel right now.")
    expect(turns.nth(2).locator(".bubble.user")).to_have_count(0)
    expect(banner).to_contain_text("agent is answering")
    expect(user.locator("#chat-announce")).to_have_text(
        "Agent: Hello, I am looking for your parcel right now."
    )
    assert polls(user) == before + 1

    # Hidden, the page polls nothing; seen again, it resumes.
    user.evaluate(SET_VISIBILITY, False)
    user.clock.run_for(10 * POLL_MS)
    assert polls(user) == before + 1
    user.evaluate(SET_VISIBILITY, True)
    poll_once(user)
    assert polls(user) == before + 2

    # The agent hands back: gone from the queue, nothing more to reply to.
    desk.get_by_role("button", name="Hand back to the bot").click()
    expect(desk.locator("#toast")).to_contain_text("Handed back")
    expect(desk.locator("#queue-active")).to_have_text("None.")
    expect(reply).to_be_disabled()
    expect(desk.get_by_role("button", name="Hand back to the bot")).to_be_hidden()

    # The user's next poll sees it: no banner, no more polling, and the bot answers again.
    poll_once(user)
    expect(banner).to_be_hidden()
    expect(user.get_by_role("button", name="Talk to a person")).to_be_visible()
    settled = polls(user)
    user.clock.run_for(10 * POLL_MS)
    assert polls(user) == settled
    send(user, "Thanks. What did I ask about?")
    expect(turns.nth(3).locator(".turn-no")).to_have_text("#4")
    expect(turns.nth(3).locator(".bubble.assistant .text")).not_to_be_empty()
    expect(turns.nth(3).locator(".for-agent-note")).to_have_count(0)

    stored = running_world.api.ok("GET", f"/sessions/{session_id}/messages")["messages"]
    assert [(t["turn"], t["origin"]) for t in stored] == [
        (1, "chat"),
        (2, "chat"),
        (3, "agent"),
        (4, "chat"),
    ]
    assert stored[2]["agent_id"] == "agent"
    assert stored[3]["response"] and not stored[3]["for_agent"]
    assert user_problems == [], user_problems
    assert desk_problems == [], desk_problems


def test_the_human_command_typed_in_the_chat_hands_the_session_to_a_person(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    user, problems = open_page(browser, running_world)
    user.get_by_role("button", name="+ New session").click()
    expect(user.get_by_label("Message")).to_be_enabled()
    send(user, "/human I would rather talk to someone")
    turn = user.locator("#messages > li.turn")
    expect(turn.locator(".turn-no")).to_have_text("#1", timeout=60_000)
    # The fixed reply says a person will answer; it is not a model's answer to rate.
    expect(turn.locator(".bubble.assistant .text")).not_to_be_empty()
    expect(turn.get_by_role("button", name="Good answer")).to_have_count(0)
    expect(user.locator("#status-banner")).to_contain_text("Waiting for a person…")
    expect(user.locator("#session-list .badge.handoff")).to_have_text("with a person")

    session_id = user.evaluate("state.current.session_id")
    queue = running_world.api.ok("GET", "/agent/sessions?state=WAITING", user="agent")
    [waiting] = [s for s in queue["sessions"] if s["session_id"] == session_id]
    assert waiting["handoff_reason"] == "user_request"
    assert problems == [], problems


def test_someone_who_is_not_an_agent_opening_the_agent_desk_sees_why_it_is_refused(
    browser: Any, running_world: World
) -> None:
    from playwright.sync_api import expect

    desk, problems = open_page(browser, running_world, "/?view=agent")
    expect(desk.locator("#queue-waiting")).to_have_text("No one is waiting.")
    desk.get_by_role("button", name="Settings").click()
    desk.get_by_label("Agent (local mode only)").fill("bob")
    desk.get_by_label("Agent (local mode only)").press("Enter")
    expect(desk.locator("#connection")).to_have_text("local API · agent bob")

    refused = desk.get_by_role("heading", name="Only agents can open the agent desk")
    expect(refused).to_be_visible()
    expect(desk.locator("#agent-denied")).to_contain_text("“bob” is not an agent")
    expect(desk.locator("#agent-denied")).to_contain_text("HTTP 403")
    expect(desk.locator("#agent-denied")).to_contain_text("local/run --agents")
    expect(desk.locator("#agent-welcome")).to_be_hidden()
    expect(desk.get_by_label("Reply as agent")).to_be_disabled()
    expect(desk.locator("#queue-status")).to_have_text("Not an agent: no queue to show.")
    expect(desk.locator("#toast")).to_be_hidden()  # explained in place, not as an error
    # It stays explained as time goes by (the desk stops polling routes it may not use).
    desk.clock.run_for(10 * POLL_MS)
    expect(refused).to_be_visible()
    desk.get_by_role("link", name="Back to the chat").click()
    expect(desk.get_by_role("heading", name="A chatbot that remembers")).to_be_visible()
    assert problems == [], problems
