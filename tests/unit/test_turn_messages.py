"""A turn keeps the client framework's own messages verbatim (POST /turns `messages`), and a
message may be as long as chat models take (MAX_INPUT_CHARS, 32,000 characters by default) -
through the chat Lambda on moto."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema
from tests.records_helpers import World, chat_world

MESSAGES = [
    {"type": "system", "data": {"content": "Be brief.", "id": None}},
    {"type": "human", "data": {"content": [{"type": "text", "text": "Hi"}, {"type": "image_url",
     "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}], "name": "ana"}},
    {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "weather", "args": {"city":
     "Porto", "days": [1, 2.5]}, "id": "call-1", "type": "tool_call"}], "ok": True}},
]  # fmt: skip


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)


def test_a_turns_messages_come_back_exactly_as_sent_and_patch_replaces_them(
    world: World,
) -> None:
    sid = world.api.new_session()
    status, data = world.api.call(
        "POST", f"/sessions/{sid}/turns", {"input": "Hi", "messages": MESSAGES}
    )
    assert status == 201, data
    assert data["turn"]["messages"] == MESSAGES
    assert world.api.call("GET", f"/sessions/{sid}/turns/1")[1]["turn"]["messages"] == MESSAGES
    more = [*MESSAGES, {"type": "tool", "data": {"content": "Sunny", "tool_call_id": "call-1"}}]
    status, data = world.api.call(
        "PATCH", f"/sessions/{sid}/turns/1", {"response": "Sunny.", "messages": more}
    )
    assert (status, data["turn"]["response"], data["turn"]["messages"]) == (200, "Sunny.", more)
    listed = world.api.call("GET", f"/sessions/{sid}/messages")[1]["messages"]
    assert listed[0]["messages"] == more
    # Exported and imported with them.
    exported = world.api.call("GET", f"/sessions/{sid}/export")[1]
    status, data = world.api.call("POST", "/sessions/import", exported)
    assert status == 201, data
    copy = data["session"]["session_id"]
    assert world.api.call("GET", f"/sessions/{copy}/turns/1")[1]["turn"]["messages"] == more
    # A chat turn has none.
    world.api.say(sid, "plain chat")
    assert world.api.call("GET", f"/sessions/{sid}/turns/2")[1]["turn"]["messages"] is None


def test_messages_over_the_limit_are_refused_and_nothing_is_stored(world: World) -> None:
    sid = world.api.new_session()
    big = [{"type": "human", "data": {"content": "x" * schema.MAX_TURN_MESSAGES_BYTES}}]
    status, data = world.api.call("POST", f"/sessions/{sid}/turns", {"input": "x", "messages": big})
    assert status == 400 and "bytes" in data["error"]["message"]
    assert world.api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 0


def test_a_message_of_32000_characters_is_taken_and_one_more_is_refused(world: World) -> None:
    """Failed first: 4,000 characters were the limit, far below what chat models take."""
    sid = world.api.new_session()
    longest = "é" * schema.MAX_INPUT_CHARS_DEFAULT
    status, data = world.api.call("POST", f"/sessions/{sid}/turns", {"input": longest})
    assert status == 201, data
    assert world.api.call("GET", f"/sessions/{sid}/turns/1")[1]["turn"]["input"] == longest
    status, data = world.api.call("POST", f"/sessions/{sid}/messages", {"content": longest})
    assert status == 200, data
    status, data = world.api.call("POST", f"/sessions/{sid}/turns", {"input": longest + "x"})
    assert (status, data["error"]["code"]) == (413, "payload_too_large")


def test_the_largest_turn_fits_one_dynamodb_item(world: World) -> None:
    """The longest input, response and messages in 4-byte characters: under 400 KB."""
    from chatmemory.adapters.dynamodb.codec import serialize, turn_to_item
    from chatmemory.api_models import MAX_STORED_RESPONSE_CHARS
    from chatmemory.domain import Turn

    emoji = "\U0001f600"
    messages = '[{"c":"' + "x" * (schema.MAX_TURN_MESSAGES_BYTES - 12) + '"}]'
    turn = Turn(
        "s" * 128,
        999_999_999,
        "u" * 200,
        emoji * schema.MAX_INPUT_CHARS_LIMIT,
        emoji * MAX_STORED_RESPONSE_CHARS,
        metadata={f"k{n:02}": "v" * 120 for n in range(16)},
        messages=messages,
        client_message_id="m" * 128,
        created_at="2026-11-27T03:00:00.000Z",
    )
    item = serialize(turn_to_item(turn))
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in item.items())
    assert size < 400 * 1024
