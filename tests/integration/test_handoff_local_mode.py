"""Hand-off to a person on real local mode (DynamoDB Local, the gateway, the handler, the offline
models): a user asks for a person, an agent (local mode's default agent, X-User-Id "agent")
answers from the queue and hands the session back, and the bot carries on with the whole
conversation; the events land in the local events file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.events_file import read_events
from local.dynamodb_local import DynamoDBLocal
from tests.integration.helpers import World, local_world

pytestmark = pytest.mark.integration

AGENT = "agent"  # local/config.py DEFAULT_AGENTS


@pytest.fixture
def world(
    dynamodb_local: DynamoDBLocal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """Local mode that keeps each turn's prompt (STORE_PROMPT), to read what the bot saw."""
    monkeypatch.setenv(schema.ENV_STORE_PROMPT, "true")
    yield from local_world(dynamodb_local, tmp_path, monkeypatch)


def test_a_user_is_handed_to_a_person_and_back_and_the_bot_sees_the_whole_conversation(
    world: World,
) -> None:
    api = world.api
    sid = api.new_session("Parcel", user="alice")
    api.say(sid, "My parcel did not arrive", user="alice")

    handed = api.ok("POST", f"/sessions/{sid}/handoff", {"note": "lost parcel"}, user="alice")
    assert handed["session"]["handoff_state"] == "WAITING"
    waiting = api.say(sid, "It was order 1234", user="alice")
    assert (waiting["for_agent"], waiting["response"], waiting["pending"]) == (True, None, False)

    queue = api.ok("GET", "/agent/sessions?state=WAITING", user=AGENT)
    assert [(s["session_id"], s["user_id"]) for s in queue["sessions"]] == [(sid, "alice")]
    view = api.ok("GET", f"/agent/sessions/{sid}", user=AGENT)
    assert [(m["turn"], m["input"], m["for_agent"]) for m in view["messages"]] == [
        (2, "It was order 1234", True),
        (1, "My parcel did not arrive", False),
    ]
    reply = api.ok(
        "POST",
        f"/agent/sessions/{sid}/messages",
        {"content": "I found order 1234: it arrives tomorrow.", "client_message_id": "a-1"},
        user=AGENT,
    )["turn"]
    assert (reply["turn"], reply["origin"], reply["agent_id"]) == (3, "agent", AGENT)
    assert api.ok("GET", f"/sessions/{sid}", user="alice")["session"]["handoff_state"] == "ACTIVE"

    # The user reads the agent's reply among the session's messages.
    messages = api.ok("GET", f"/sessions/{sid}/messages", user="alice")["messages"]
    assert [(m["origin"], m["response"]) for m in messages][1:] == [
        ("chat", None),
        ("agent", "I found order 1234: it arrives tomorrow."),
    ]

    back = api.ok("POST", f"/agent/sessions/{sid}/handback", user=AGENT)
    assert back["session"]["handoff_state"] is None
    answered = api.say(sid, "What time tomorrow?", user="alice")
    assert answered["response"] and not answered["for_agent"]
    stored = wiring.short_term_memory().get_turn(sid, answered["turn"])
    assert stored is not None and stored.prompt is not None
    lines = stored.prompt.splitlines()
    assert "Agent: I found order 1234: it arrives tomorrow." in lines
    assert lines.index("User: It was order 1234") + 1 == lines.index(
        "Agent: I found order 1234: it arrives tomorrow."
    )

    events = read_events(world.state_dir / "events.jsonl")
    assert [(e["source"], e["detail-type"]) for e in events] == [
        ("chatmemory", schema.HANDOFF_EVENT),
        ("chatmemory", schema.HANDBACK_EVENT),
    ]
    handoff, handback = (e["detail"] for e in events)
    assert (handoff["session_id"], handoff["user_id"], handoff["reason"]) == (
        sid,
        "alice",
        "user_request",
    )
    assert handoff["turn"] == 1 and "note" not in handoff
    assert (handback["agent_id"], handback["turn"]) == (AGENT, 3)


def test_a_user_never_reaches_the_agent_routes(world: World) -> None:
    api = world.api
    sid = api.new_session("Mine", user="alice")
    api.ok("POST", f"/sessions/{sid}/handoff", user="alice")
    for method, path, body in (
        ("GET", "/agent/sessions", None),
        ("GET", f"/agent/sessions/{sid}", None),
        ("POST", f"/agent/sessions/{sid}/messages", {"content": "I am the agent now"}),
        ("POST", f"/agent/sessions/{sid}/handback", None),
    ):
        for user in ("alice", "mallory"):
            status, data = api.call(method, path, body, user=user)
            assert (status, data["error"]["code"]) == (403, "forbidden"), (method, path, user)
    assert api.ok("GET", f"/sessions/{sid}/messages", user="alice")["messages"] == []
    assert api.ok("GET", f"/sessions/{sid}", user="alice")["session"]["handoff_state"] == "WAITING"


def test_the_human_command_hands_off_in_local_mode(world: World) -> None:
    api = world.api
    sid = api.new_session("Command", user="bob")
    turn = api.say(sid, "/human I was charged twice", user="bob")
    assert turn["intent"] == "human" and turn["response"]
    assert api.ok("GET", f"/sessions/{sid}", user="bob")["session"]["handoff_reason"] == (
        "user_request"
    )
    [event] = read_events(world.state_dir / "events.jsonl")
    assert "I was charged twice" not in json.dumps(event) and event["detail"]["user_id"] == "bob"
