"""What a newcomer hit on the page (issue 44), in headless Chromium against local mode: a bare
command, a search that missed what the panel showed, a link to a deleted session that did
nothing, scores that meant nothing, rating buttons drawn as empty boxes without an emoji font,
names cut short, the "Kind" menu, the profile's records under every answer, session summaries
among the facts, and a toast over the Send button. Each test failed before its fix."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import pytest

from tests.integration.helpers import World, page_problems

pytestmark = pytest.mark.integration

SEND = re.compile(r"/sessions/[^/]+/messages$")


def open_page(browser: Any, world: World, *, width: int = 1280) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 800})
    problems = page_problems(page)
    page.goto(world.url + "/")
    return page, problems


def consolidated(world: World, name: str, said: str) -> str:
    """A session of one message, ended and consolidated (the poller drained), by the API. The
    first message of a test loads the embedding model: on a loaded machine that can take the
    request's whole deadline (a 503), and the message is sent again with its id, as the API
    asks."""
    session_id = world.api.new_session(name)
    body = {"content": said, "client_message_id": f"{session_id}-1"}
    for _ in range(3):
        status, _answer = world.api.call("POST", f"/sessions/{session_id}/messages", body)
        if status != 503:
            break
    assert status == 200, status
    world.api.end(session_id)
    world.poller.drain()
    assert world.api.status(session_id) == "CONSOLIDATED"
    return session_id


def new_session(page: Any) -> Any:
    from playwright.sync_api import expect

    page.get_by_role("button", name="+ New session").click()
    message = page.get_by_label("Message")
    expect(message).to_be_enabled()
    return message


def test_a_bare_command_gets_a_hint_and_nothing_is_sent(browser: Any, world: World) -> None:
    """Failed before: `/past` alone was sent, refused with a 400 shown in a bubble labelled
    RECALLED with a Retry that could only fail, and a toast over the Send button."""
    from playwright.sync_api import expect

    page, problems = open_page(browser, world)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    message = new_session(page)
    hint = page.locator("#composer-hint")
    for command, needs in (
        ("/remember", "/remember needs what to remember after it, for example: /remember I am"),
        ("  /Verified  ", "/verified needs a question after it"),
        ("/past", "/past needs a question after it, for example: /past what did I say"),
    ):
        message.fill(command)
        message.press("Enter")
        expect(hint).to_be_visible()
        expect(hint).to_contain_text(needs)
        expect(message).to_have_value(command)  # kept, to be completed
        expect(message).to_be_focused()
    expect(page.locator("#messages > li.turn")).to_have_count(0)
    expect(page.locator("#toast")).to_be_hidden()
    assert not [url for url in sent if SEND.search(url)]

    # Completed, it goes; the hint goes as soon as the command has something after it.
    message.press("End")
    message.type(" what did I say about my garden?")
    expect(hint).to_be_hidden()
    message.press("Enter")
    turns = page.locator("#messages > li.turn")
    expect(turns).to_have_count(1)
    expect(turns.first.locator(".intent-badge")).to_have_text("recalled")
    expect(turns.first.locator(".typing")).to_have_count(0, timeout=60_000)
    # /human needs nothing after it, and "/pasta" is no command: neither gets a hint.
    message.fill("/pasta with basil is my favourite")
    message.press("Enter")
    expect(turns).to_have_count(2)
    expect(hint).to_be_hidden()
    expect(turns.nth(1).locator(".intent-badge")).to_have_count(0)
    assert problems == [], problems


def test_a_refused_message_says_why_in_its_bubble_and_can_be_edited(
    browser: Any, world: World
) -> None:
    """Failed before: a refused message kept the badge of its command and a Retry that could
    only fail again, and the error also came as a toast over the Send button."""
    from playwright.sync_api import expect

    page, problems = open_page(browser, world)
    message = new_session(page)
    page.evaluate("document.getElementById('message').removeAttribute('maxlength')")
    too_long = "/past " + "y" * 32_001  # over MAX_INPUT_CHARS (32,000): a 413
    message.fill(too_long)
    message.press("Enter")
    turn = page.locator("#messages > li.turn").first
    answer = turn.locator(".bubble.assistant")
    expect(answer.locator(".error-text")).to_contain_text("Not sent:", timeout=30_000)
    expect(answer.locator(".intent-badge")).to_have_count(0)
    expect(answer.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.locator("#toast")).to_be_hidden()
    answer.get_by_role("button", name="Edit and send again").click()
    expect(page.locator("#messages > li.turn")).to_have_count(0)
    expect(message).to_have_value(too_long)
    expect(message).to_be_focused()
    assert all("413" in p for p in problems), problems


def test_the_toast_never_covers_the_send_button(browser: Any, world: World) -> None:
    page, _ = open_page(browser, world)
    new_session(page)
    page.evaluate("showError(new Error('Something went wrong, and this is a long message.'))")
    toast = page.locator("#toast").bounding_box()
    send = page.get_by_role("button", name="Send").bounding_box()
    assert toast is not None and send is not None
    apart = (
        toast["y"] + toast["height"] <= send["y"]
        or send["y"] + send["height"] <= toast["y"]
        or toast["x"] + toast["width"] <= send["x"]
        or send["x"] + send["width"] <= toast["x"]
    )
    assert apart, (toast, send)


def test_the_search_finds_what_i_remember_and_past_sessions_without_scores(
    browser: Any, world: World
) -> None:
    """Failed before: the sidebar search read past sessions only, so it said "Nothing
    remembered about that yet" while the panel below showed the fact; and each result showed a
    score that mixes meaning, words and recency and means nothing alone."""
    from playwright.sync_api import expect

    page, problems = open_page(browser, world)
    panel = page.get_by_role("region", name="What I remember about you")
    page.get_by_label("Tell me something to remember").fill("I am allergic to peanuts.")
    panel.get_by_role("button", name="Remember", exact=True).click()
    expect(panel.locator("#record-list > li.record")).to_have_count(1, timeout=60_000)

    page.get_by_label("Search long-term memory").fill("peanut allergy")
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.locator("#memory-results")
    found = results.get_by_role("region", name="What I remember about you")
    expect(found).to_contain_text("I am allergic to peanuts.", timeout=60_000)
    expect(found.locator(".record-type")).to_have_text("fact")
    expect(results).not_to_contain_text("Nothing remembered")
    found.get_by_role("button", name="I am allergic to peanuts.").click()
    expect(panel.locator("#record-list > li.record").first).to_be_focused()

    # A past session is found too, under its own heading; no score anywhere.
    consolidated(world, "Garden", "My peanut plants have rust.")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(results.get_by_role("region", name="Past sessions")).to_contain_text(
        "Garden", timeout=60_000
    )
    expect(results).not_to_contain_text("score")
    assert problems == [], problems


def test_a_source_that_was_deleted_says_so_and_answers_show_no_scores(
    browser: Any, world: World
) -> None:
    """Failed before: clicking "Sessions used" for a session deleted since did nothing (a toast
    at most), and each source showed a "score"."""
    from playwright.sync_api import expect

    api = world.api
    session_id = consolidated(world, "Tomatoes", "My tomatoes have blight on the lower leaves.")

    page, problems = open_page(browser, world)
    message = new_session(page)
    message.fill("/past what was wrong with my tomatoes?")
    message.press("Enter")
    answer = page.locator("#messages > li.turn").first.locator(".bubble.assistant")
    expect(answer.locator(".sources summary")).to_have_text("Sessions used (1)", timeout=60_000)
    source = answer.locator(".source-session")
    expect(source).to_contain_text("Tomatoes")
    expect(answer).not_to_contain_text("score")

    api.ok("DELETE", f"/sessions/{session_id}")  # elsewhere (another tab, the API)
    source.get_by_role("button", name="Tomatoes").click()
    gone = answer.locator(".source-session.gone")
    expect(gone).to_contain_text("Tomatoes (deleted since)")
    expect(gone.get_by_role("button")).to_have_count(0)
    expect(page.locator("#chat-announce")).to_have_text('The session "Tomatoes" was deleted since.')
    expect(page.locator("#toast")).to_be_hidden()
    # Drawn again (a new message), it still says so.
    message.fill("thanks")
    message.press("Enter")
    expect(page.locator("#messages > li.turn")).to_have_count(2)
    expect(answer.locator(".source-session.gone")).to_have_count(1)
    assert all("404" in p for p in problems), problems


def _emoji(text: str) -> list[str]:
    """Characters that need an emoji font (pictographs and symbols drawn as emoji)."""
    return [c for c in text if unicodedata.category(c) == "So" or 0x1F000 <= ord(c) <= 0x1FAFF]


def test_rating_buttons_names_the_kind_menu_and_summaries_read_on_any_machine(
    browser: Any, world: World
) -> None:
    """Failed before: the rating buttons were 👍 and 👎, empty boxes on a machine without an
    emoji font; a long session name was cut to one line with no way to read the rest; the kind
    of a new memory was a menu whose only label was its first choice ("Kind: automatic"),
    squeezed by the button beside it; session summaries were not said to be what they are."""
    from playwright.sync_api import expect

    long_name = (
        "Planning the vegetable garden for next spring: tomatoes, basil and marigolds by the shed"
    )
    consolidated(world, long_name, "I will plant basil in May.")

    for width in (1280, 390):
        page, problems = open_page(browser, world, width=width)
        if width == 390:
            page.get_by_role("button", name="Show sessions").click()
            expect(page.locator("#sidebar")).to_have_css("transform", "none")  # slid in
        label = page.locator("#session-list .session-label", has_text="Planning the vegetable")
        expect(label).to_have_attribute("title", long_name)
        shown = label.evaluate(
            "e => ({w: e.scrollWidth - e.clientWidth, h: e.scrollHeight - e.clientHeight})"
        )
        assert shown["w"] <= 0 and shown["h"] <= 1, shown  # all of it, wrapped
        expect(label).to_have_text(long_name)

        kind = page.get_by_label("Kind", exact=True)
        expect(kind).to_be_visible()
        options = kind.locator("option").all_inner_texts()
        assert options == ["automatic", "fact", "preference"], options
        form = page.locator("#record-add").bounding_box()
        for choice in options:
            kind.select_option(label=choice)
            box = kind.bounding_box()
            fits = kind.evaluate(
                """select => {
                  const style = getComputedStyle(select);
                  const canvas = document.createElement("canvas").getContext("2d");
                  canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
                  const text = canvas.measureText(select.selectedOptions[0].text).width;
                  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
                  return select.clientWidth - padding - text;  // room left for the arrow
                }"""
            )
            assert fits >= 16, (choice, fits)
            assert box is not None and form is not None
            assert box["x"] + box["width"] <= form["x"] + form["width"] + 0.5
        save = page.locator("#record-save").bounding_box()
        assert save is not None and form is not None
        assert save["x"] + save["width"] <= form["x"] + form["width"] + 0.5, (save, form)

        summaries = page.locator("#summaries")
        expect(summaries).to_be_visible()
        expect(page.locator("#record-list .type-summary")).to_have_count(0)
        summaries.locator("summary").click()
        expect(summaries).to_contain_text("not facts about you, but memories of conversations")
        expect(summaries.locator(".type-summary")).to_have_count(1)
        page.close()
        assert problems == [], problems

    page, problems = open_page(browser, world)
    message = new_session(page)
    message.fill("Hello there")
    message.press("Enter")
    rating = page.locator("#messages .rating-control").first
    expect(rating.get_by_role("button")).to_have_count(2, timeout=60_000)
    for name in ("Good answer", "Bad answer"):
        button = rating.get_by_role("button", name=name)
        expect(button).to_have_text(name)  # its words are what is drawn
    texts = page.locator("button:visible").all_inner_texts()
    assert not [t for t in texts if _emoji(t)], texts
    assert problems == [], problems


def test_the_profiles_records_are_a_closed_group_of_their_own_under_an_answer(
    browser: Any, world: World
) -> None:
    """The records of the profile every prompt holds (sources of kind "profile") are counted in
    one closed group, apart from what was recalled for the answer. The turn is the API's answer
    as it will be once the profile block lands (served to the page by the test)."""
    from playwright.sync_api import expect

    page, problems = open_page(browser, world)
    new_session(page)
    session_id = page.evaluate("state.current.session_id")
    profile = [
        {"kind": "profile", "id": f"rec-{i}", "title": text, "date": "2026-03-01T10:00:00Z"}
        for i, text in enumerate(
            ("I am allergic to peanuts.", "My sister is called Ana.", "I prefer tea.")
        )
    ]
    turn = {
        "turn": 1,
        "input": "Hello!",
        "response": "Hello! How can I help?",
        "intent": "chat",
        "created_at": "2026-03-02T10:00:00Z",
        "client_message_id": "m-1",
        "sources": [
            *profile,
            {"kind": "record", "id": "rec-9", "title": "I live in Lisbon.", "date": None},
        ],
    }

    def messages(route: Any) -> None:
        body = {"messages": [turn], "next_token": None}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(re.compile(rf"/sessions/{session_id}/messages\?"), messages)
    page.reload()
    answer = page.locator("#messages > li.turn").first.locator(".bubble.assistant")
    groups = answer.locator("details.sources")
    expect(groups).to_have_count(2)
    expect(groups.nth(0).locator("summary")).to_have_text("Memories used (1)")
    expect(groups.nth(0)).to_have_attribute("open", "")
    expect(groups.nth(0)).to_contain_text("I live in Lisbon.")
    expect(groups.nth(0)).not_to_contain_text("allergic")
    mine = groups.nth(1)
    expect(mine.locator("summary")).to_have_text("From your profile (3)")
    expect(mine).not_to_have_attribute("open", "")
    expect(mine.get_by_role("button", name="I am allergic to peanuts.")).to_be_hidden()
    mine.locator("summary").click()
    expect(mine.get_by_role("button", name="I am allergic to peanuts.")).to_be_visible()
    expect(mine.locator(".source-record")).to_have_count(3)
    assert problems == [], problems
