"""Memory in every turn on local mode (DynamoDB Local, the stream poller, the real handlers, the
offline models): a fact told in one session is used in a later ordinary turn, then corrected,
then deleted; and what a new user sees when they try it."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from chatmemory.schema import PROMPT_MEMORY_HEADER
from tests.integration.helpers import World

pytestmark = pytest.mark.integration


def _told(world: World, lines: list[str]) -> str:
    """A session that says `lines`, ended and consolidated by the poller."""
    sid = world.api.ok("POST", "/sessions", {})["session"]["session_id"]
    for line in lines:
        world.api.say(sid, line)
    world.api.end(sid)
    world.poller.drain()
    assert world.api.status(sid) == "CONSOLIDATED"
    return sid


def _records(world: World, query: str = "") -> list[dict[str, Any]]:
    path = "/memories/records" + (f"?q={quote(query)}" if query else "")
    return world.api.ok("GET", path)["records"]


def test_a_fact_told_once_is_used_later_then_corrected_then_deleted(world: World) -> None:
    api = world.api
    told = _told(world, ["We are adopting a rescue greyhound named Biscuit next month."])
    [fact] = [r for r in _records(world) if r["type"] == "fact"]
    assert "Biscuit" in fact["text"]
    assert fact["provenance"] == [{"session_id": told, "turn": 1, "date": fact["created_at"]}]

    # A later, ordinary turn (no /past): the memory is in the answer's sources, with its date.
    later = api.ok("POST", "/sessions", {})["session"]["session_id"]
    turn = api.say(later, "what is the name of the dog we are adopting?")
    assert turn["intent"] == "chat"
    cited = {s["id"]: s for s in turn["sources"]}
    assert fact["record_id"] in cited or told in cited
    assert all(s["date"] for s in turn["sources"])
    assert "Biscuit" in turn["response"]  # the offline responder quotes what it was given

    # The user corrects it: the next turn uses the corrected text.
    corrected = api.ok(
        "PATCH",
        f"/memories/records/{fact['record_id']}",
        {"text": "We adopted a rescue greyhound named Pixel."},
    )["record"]
    assert corrected["origin"] == "corrected" and "Pixel" in corrected["text"]
    turn = api.say(later, "what is our greyhound called?")
    assert fact["record_id"] in {s["id"] for s in turn["sources"]}
    assert "Pixel" in turn["response"]

    # Deleted: never listed, searched or recalled again, and purged by the poller.
    assert api.call("DELETE", f"/memories/records/{fact['record_id']}")[0] == 204
    assert fact["record_id"] not in {r["record_id"] for r in _records(world)}
    assert fact["record_id"] not in {r["record_id"] for r in _records(world, "greyhound Pixel")}
    turn = api.say(later, "what is our greyhound called?")
    assert fact["record_id"] not in {s["id"] for s in turn["sources"]}
    assert "Pixel" not in turn["response"]
    world.poller.drain()
    status, _ = api.call("PATCH", f"/memories/records/{fact['record_id']}", {"text": "x"})
    assert status == 404


def test_what_a_new_user_sees(world: World) -> None:
    """The walk-through of the issue: /past finds the dog by meaning, the responder's notes
    are not memory, small talk stays quiet, and sessions are named from what they are about."""
    api = world.api
    told = _told(world, ["We are adopting a rescue greyhound named Biscuit next month."])
    session = api.ok("GET", f"/sessions/{told}")["session"]
    assert session["name"] == "Adopting a rescue greyhound named Biscuit"

    now = api.ok("POST", "/sessions", {"name": "Mine"})["session"]["session_id"]
    turn = api.say(now, "/past what was the name of the dog we adopt?")
    assert [s["id"] for s in turn["sources"]][:1] == [told]
    assert "Biscuit" in turn["response"]
    hello = api.say(now, "hi!")  # small talk recalls nothing; the profile is in every prompt
    assert [s for s in hello["sources"] if s["kind"] != "profile"] == []
    assert api.ok("GET", f"/sessions/{now}")["session"]["name"] == "Mine"  # kept as given

    # What the offline responder said is not memory: no snippet quotes its boilerplate.
    memories = api.ok("GET", "/memories?q=greyhound&k=3")["memories"]
    assert memories and all("[offline responder]" not in str(m) for m in memories)
    assert PROMPT_MEMORY_HEADER not in str(memories)


def test_what_the_user_told_is_used_when_asked_something_that_needs_it(world: World) -> None:
    """The newcomer's case on local mode: told an allergy and a sister's name in one sentence
    among small talk and a passing remark, then asked, in a new session, what to avoid
    cooking. The profile block carries both facts (the offline responder shows the allergy
    first: health and safety first); the remark was never kept as a fact."""
    api = world.api
    _told(
        world,
        [
            "Hi! Quick question before we start.",
            "I'm allergic to peanuts and my sister is called Ana.",
            "I'm on the train at the moment.",
            "Thanks, that's all for now.",
        ],
    )
    facts = {r["text"]: r for r in _records(world) if r["type"] == "fact"}
    assert set(facts) == {"I'm allergic to peanuts.", "My sister is called Ana."}
    assert facts["I'm allergic to peanuts."]["category"] == "health"
    # Not in what it knows about the user; the session's summary (episodic memory: what
    # happened in that session, listed apart on the page) keeps it.
    records = _records(world)
    assert not any("train" in r["text"] for r in records if r["type"] != "summary")
    assert any("train" in r["text"] for r in records if r["type"] == "summary")

    later = api.ok("POST", "/sessions", {})["session"]["session_id"]
    turn = api.say(later, "What should I avoid cooking for myself?")

    profile = [s["id"] for s in turn["sources"] if s["kind"] == "profile"]
    assert profile == [
        facts["I'm allergic to peanuts."]["record_id"],
        facts["My sister is called Ana."]["record_id"],
    ]
    assert "allergic to peanuts" in turn["response"]

    # Stated with /remember, it is in the very next prompt (and shown), no session needed.
    api.say(later, "/remember I keep kosher")
    turn = api.say(later, "Which restaurant should we book for my birthday?")
    assert "I keep kosher" in [s["title"] for s in turn["sources"] if s["kind"] == "profile"]

    # A greeting gets no recital of the profile from the offline responder.
    turn = api.say(later, "hello!")
    assert "peanuts" not in turn["response"] and "3 things you told me" in turn["response"]
