"""A conversation that goes on after its session ended (the idle sweeper ends a session after
IDLE_MINUTES): POST /sessions with continue_from, and the prompt telling the model how long the
user was away - through the chat Lambda on moto with a fake model."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chatmemory.services.conversation.chat import gap_note
from tests.records_helpers import World, chat_world


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)


def _away(world: World, **gap: float) -> None:
    world.deps.clock._now += timedelta(**gap)  # type: ignore[attr-defined]


def test_a_continued_session_carries_the_name_summary_and_last_turns_of_the_ended_one(
    world: World,
) -> None:
    old = world.api.new_session(name="Trip to Lisbon")
    world.api.say(old, "We fly to Lisbon on the 3rd of May")
    world.api.say(old, "My sister Ana comes along")
    world.memory.update_running_summary(old, "Planning a trip to Lisbon.", 0, 0)
    assert world.api.call("POST", f"/sessions/{old}/end")[0] == 200
    status, data = world.api.call("POST", f"/sessions/{old}/messages", {"content": "hello?"})
    assert (status, data["error"]["code"]) == (409, "session_ended")

    status, data = world.api.call("POST", "/sessions", {"continue_from": old})
    assert status == 201, data
    new = data["session"]
    assert (new["continued_from"], new["name"], new["status"]) == (old, "Trip to Lisbon", "OPEN")
    world.api.say(new["session_id"], "Who is coming with me?")
    prompt = world.model.prompts[-1]
    assert "Planning a trip to Lisbon." in prompt  # the carried rolling summary
    assert "We fly to Lisbon on the 3rd of May" in prompt and "My sister Ana" in prompt
    assert prompt.index("My sister Ana") < prompt.index("Who is coming with me?")
    assert world.api.call("GET", f"/sessions/{old}")[1]["session"]["status"] == "ENDED"


def test_the_old_turns_leave_the_window_as_the_new_session_fills_it(world: World) -> None:
    old = world.api.new_session()
    world.api.say(old, "old message about the garden")
    world.api.call("POST", f"/sessions/{old}/end")
    new = world.api.call("POST", "/sessions", {"continue_from": old})[1]["session"]["session_id"]
    for i in range(6):
        world.api.say(new, f"new message {i}")
    # The sixth message's window: five of this session's turns and the last of the old one.
    assert "old message about the garden" in world.model.prompts[-1]
    world.api.say(new, "new message 6")
    assert "old message about the garden" not in world.model.prompts[-1]
    assert "new message 0" in world.model.prompts[-1]


def test_continuing_an_open_session_ends_it_and_another_callers_is_not_found(
    world: World,
) -> None:
    old = world.api.new_session()
    world.api.say(old, "still open")
    status, data = world.api.call("POST", "/sessions", {"continue_from": old})
    assert status == 201 and data["session"]["continued_from"] == old
    assert world.api.call("GET", f"/sessions/{old}")[1]["session"]["status"] == "ENDED"
    status, data = world.api.call("POST", "/sessions", {"continue_from": old}, user="mallory")
    assert (status, data["error"]["code"]) == (404, "session_not_found")
    status, _ = world.api.call("POST", "/sessions", {"continue_from": ""})
    assert status == 400


def test_after_a_long_pause_the_prompt_says_how_long_it_has_been(world: World) -> None:
    sid = world.api.new_session()
    world.api.say(sid, "I started reading Dune")
    world.api.say(sid, "chapter two now")
    assert "previous message was" not in world.model.prompts[-1]
    world.api.call("POST", f"/sessions/{sid}/end")
    new = world.api.call("POST", "/sessions", {"continue_from": sid})[1]["session"]["session_id"]
    _away(world, days=3, hours=2)
    world.api.say(new, "I finished it!")
    assert "The user's previous message was 3 days ago" in world.model.prompts[-1]
    world.api.say(new, "What should I read next?")
    assert "previous message was" not in world.model.prompts[-1]


@pytest.mark.parametrize(
    ("gap", "said"),
    [
        (timedelta(hours=5, minutes=59), ""),
        (timedelta(hours=6), "6 hours"),
        (timedelta(days=1, hours=3), "1 day"),
        (timedelta(days=15), "2 weeks"),
        (timedelta(days=65), "2 months"),
        (timedelta(days=800), "2 years"),
    ],
)
def test_the_gap_is_said_in_the_largest_whole_unit(gap: timedelta, said: str) -> None:
    from datetime import UTC, datetime

    from chatmemory.domain import Turn

    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    last = Turn("s", 1, "u", "hi", "hello", created_at=(now - gap).isoformat())
    note = gap_note([last], now, 6.0)
    assert (f"was {said} ago" in note) if said else note == ""
    assert gap_note([last], now, 0) == "" and gap_note([], now, 6.0) == ""
