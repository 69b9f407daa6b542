"""The hard cases of real conversations on local mode (DynamoDB Local, the gateway, the stream
poller, the real handlers, the offline models): the sentiment of each message and the hand-off
it can trigger, a session left unfinished picked up by the next one, and a user who comes back
after the sweeper ended their session. (Stacked messages and hand-off on request have their own
files; the page's lost connections are in test_web_page_offline.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.events_file import read_events
from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World, local_world

pytestmark = pytest.mark.integration


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode with the negative-sentiment rule on (two negative messages in a row) and each
    turn's prompt kept, to read what the bot saw."""
    monkeypatch.setenv(schema.ENV_HANDOFF_NEGATIVE_TURNS, "2")
    monkeypatch.setenv(schema.ENV_STORE_PROMPT, "true")
    yield from local_world(dynamodb_local, tmp_path, monkeypatch)


def test_each_message_carries_its_sentiment_and_two_angry_ones_bring_a_person(
    world: World,
) -> None:
    api = world.api
    sid = api.new_session("Refund")
    happy = api.say(sid, "Thanks, the new headphones are great!")
    assert happy["sentiment"]["label"] == "positive" and happy["sentiment"]["score"] > 0.5
    first = api.say(sid, "This is terrible, the charger is broken and useless.")
    assert first["sentiment"]["label"] == "negative"
    session = api.ok("GET", f"/sessions/{sid}")["session"]
    assert session["handoff_state"] is None  # one angry message is not yet a pattern

    second = api.say(sid, "I am really angry, this is the worst service ever.")

    assert second["sentiment"]["label"] == "negative"
    assert "person" in second["response"]  # answered, and told a person takes over
    session = api.ok("GET", f"/sessions/{sid}")["session"]
    assert (session["handoff_state"], session["handoff_reason"]) == (
        "WAITING",
        "negative_sentiment",
    )
    [event] = read_events(world.state_dir / "events.jsonl")
    assert (event["detail-type"], event["detail"]["session_id"]) == (schema.HANDOFF_EVENT, sid)
    assert event["detail"]["reason"] == "negative_sentiment"
    # The sentiment is in the listing and in the export, message by message.
    listed = api.ok("GET", f"/sessions/{sid}/messages")["messages"]
    exported = api.ok("GET", f"/sessions/{sid}/export")["messages"]
    labels = ["positive", "negative", "negative"]
    assert [m["sentiment"]["label"] for m in listed] == labels
    assert [m["sentiment"]["label"] for m in exported] == labels


def test_a_session_left_unsettled_is_picked_up_by_the_next_one(world: World) -> None:
    api = world.api
    first = api.new_session("Japan")
    api.say(first, "We are going to Japan in the spring with the kids.")
    api.say(first, "We haven't decided the date of the trip yet.")
    api.end(first)
    world.poller.drain()
    assert api.status(first) == "CONSOLIDATED"
    [question] = api.ok("GET", "/memories/records?type=open_question")["records"]
    assert "date" in question["text"] and question["provenance"][0]["session_id"] == first

    later = api.new_session("Later")
    turn = api.say(later, "Can we plan the trip to Japan now?")

    # The next session is reminded of the thread, as an open question of that session.
    assert question["record_id"] in {s["id"] for s in turn["sources"]}
    stored = wiring.short_term_memory().get_turn(later, turn["turn"])
    assert stored is not None and stored.prompt is not None
    assert "not settled" in stored.prompt and "date of the trip" in stored.prompt
    # /past finds the session it came from.
    past = api.say(later, "/past what did we leave open about the trip?")
    assert first in {s["id"] for s in past["sources"]}


def test_a_user_back_after_the_session_ended_continues_it_in_a_new_one(world: World) -> None:
    api = world.api
    old = api.new_session("Garden")
    api.say(old, "I am planting tomatoes along the south fence.")
    api.end(old)  # as the idle sweeper would
    status, answer = api.call("POST", f"/sessions/{old}/messages", {"content": "and basil?"})
    assert (status, answer["error"]["code"]) == (409, "session_ended")

    new = api.ok("POST", "/sessions", {"continue_from": old})["session"]
    assert (new["continued_from"], new["name"]) == (old, "Garden")
    turn = api.say(new["session_id"], "and basil?")

    stored = wiring.short_term_memory().get_turn(new["session_id"], turn["turn"])
    assert stored is not None and stored.prompt is not None
    # The old session's last turns are in the window of the new one.
    assert "User: I am planting tomatoes along the south fence." in stored.prompt.splitlines()
