"""Session ids a client chooses (PUT /sessions/{id}): a framework's thread id names a
conversation for as long as it exists, in the caller's own id space - through the chat Lambda on
moto with a fake model, and the purge Lambda behind it."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema
from tests.records_helpers import World, chat_world


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)


def _put(world: World, sid: str, body: Any = None, user: str = "alice") -> tuple[int, Any]:
    return world.api.call("PUT", f"/sessions/{sid}", body, user=user)


def _texts(world: World, sid: str, user: str = "alice") -> list[str]:
    status, data = world.api.call("GET", f"/sessions/{sid}/messages", user=user)
    assert status == 200, data
    return [m["input"] for m in data["messages"]]


def _end(world: World, sid: str) -> None:
    assert world.api.call("POST", f"/sessions/{sid}/end")[0] == 200


def test_put_creates_a_session_under_the_callers_id_once(world: World) -> None:
    status, data = _put(world, "user42-conv", {"name": "Garden"})
    assert status == 201, data
    created = data["session"]
    assert (created["client_id"], created["name"], created["status"]) == (
        "user42-conv",
        "Garden",
        "OPEN",
    )
    status, again = _put(world, "user42-conv", {"name": "Ignored"})
    assert status == 200
    assert again["session"]["session_id"] == created["session_id"]
    assert again["session"]["name"] == "Garden"
    # Listed with the caller's id, once.
    listed = world.api.call("GET", "/sessions")[1]["sessions"]
    assert [(s["session_id"], s["client_id"]) for s in listed] == [
        (created["session_id"], "user42-conv")
    ]


def test_two_callers_with_the_same_id_never_meet(world: World) -> None:
    alice = _put(world, "user42-conv")[1]["session"]["session_id"]
    bob = _put(world, "user42-conv", user="bob")[1]["session"]["session_id"]
    assert alice != bob
    world.api.say("user42-conv", "alice's secret", user="alice")
    world.api.say("user42-conv", "bob's words", user="bob")
    assert _texts(world, "user42-conv") == ["alice's secret"]
    assert _texts(world, "user42-conv", user="bob") == ["bob's words"]
    # Nor through the other's server id, nor by taking it as a client id.
    assert world.api.call("GET", f"/sessions/{alice}", user="bob")[0] == 404
    assert _put(world, alice, user="bob")[0] == 201
    assert _texts(world, alice, user="bob") == []
    assert _texts(world, alice) == ["alice's secret"]
    # A third caller has no such session at all.
    assert world.api.call("GET", "/sessions/user42-conv", user="carol")[0] == 404


def test_every_session_route_takes_the_callers_id(world: World) -> None:
    sid = _put(world, "conv-1")[1]["session"]["session_id"]
    call = world.api.call
    assert call("GET", "/sessions/conv-1")[1]["session"]["session_id"] == sid
    world.api.say("conv-1", "hello there")
    assert call("GET", f"/sessions/{sid}/messages")[1]["messages"][0]["input"] == "hello there"
    status, stored = call("POST", "/sessions/conv-1/turns", {"input": "stored", "response": None})
    assert status == 201, stored
    number = stored["turn"]["turn"]
    assert call("GET", f"/sessions/conv-1/turns/{number}")[1]["turn"]["input"] == "stored"
    status, patched = call("PATCH", f"/sessions/conv-1/turns/{number}", {"response": "done"})
    assert (status, patched["turn"]["response"]) == (200, "done")
    status, rated = call("PUT", f"/sessions/conv-1/turns/{number}/feedback", {"rating": "up"})
    assert status == 200, rated
    assert _texts(world, "conv-1") == ["hello there", "stored"]
    status, export = call("GET", "/sessions/conv-1/export")
    assert status == 200 and len(export["messages"]) == 2
    status, cont = call("POST", "/sessions", {"continue_from": "conv-1"})
    assert (status, cont["session"]["continued_from"]) == (201, sid)
    assert call("GET", "/sessions/conv-1")[1]["session"]["status"] == "ENDED"


def test_put_with_a_server_id_of_the_caller_is_that_session(world: World) -> None:
    sid = world.api.new_session()
    status, data = _put(world, sid)
    assert (status, data["session"]["session_id"], data["session"]["client_id"]) == (
        200,
        sid,
        None,
    )


def test_an_id_outside_the_identifier_rule_is_refused(world: World) -> None:
    assert _put(world, "a b")[0] == 400
    assert _put(world, "..")[0] in (400, 404)
    assert _put(world, "x" * 129)[0] == 400


def test_after_a_delete_the_id_is_free_at_once_and_nothing_of_the_old_is_readable(
    world: World,
) -> None:
    old = _put(world, "conv")[1]["session"]["session_id"]
    world.api.say("conv", "the old conversation")
    assert world.api.call("DELETE", "/sessions/conv")[0] == 204
    assert world.api.call("GET", "/sessions/conv")[0] == 404
    assert world.api.call("GET", "/sessions/conv/messages")[0] == 404
    status, data = _put(world, "conv")
    assert status == 201, data
    fresh = data["session"]
    assert fresh["session_id"] != old and fresh["num_turns"] == 0
    assert fresh["continued_from"] is None
    assert _texts(world, "conv") == []
    world.api.say("conv", "a new start")
    assert "the old conversation" not in world.model.prompts[-1]
    assert world.api.call("GET", f"/sessions/{old}")[0] == 404


def test_a_message_to_an_ended_session_continues_it_under_the_same_id(world: World) -> None:
    """The idle sweeper ends a session after 30 minutes: a framework's thread id must keep
    working, with the conversation so far in the model's prompt."""
    old = _put(world, "thread-7", {"name": "Trip"})[1]["session"]["session_id"]
    world.api.say("thread-7", "We fly to Lisbon on the 3rd of May")
    _end(world, "thread-7")

    world.api.say("thread-7", "When do we fly?")
    new = world.api.call("GET", "/sessions/thread-7")[1]["session"]
    assert new["session_id"] != old
    assert _texts(world, new["session_id"]) == ["When do we fly?"]
    assert (new["continued_from"], new["status"], new["name"], new["client_id"]) == (
        old,
        "OPEN",
        "Trip",
        "thread-7",
    )
    assert "We fly to Lisbon on the 3rd of May" in world.model.prompts[-1]
    # A stored turn continues the same way; the server id of the ended session still refuses.
    _end(world, "thread-7")
    status, stored = world.api.call("POST", "/sessions/thread-7/turns", {"input": "later"})
    assert status == 201, stored
    third = world.api.call("GET", "/sessions/thread-7")[1]["session"]
    assert third["continued_from"] == new["session_id"]
    status, data = world.api.call("POST", f"/sessions/{old}/messages", {"content": "hello?"})
    assert (status, data["error"]["code"]) == (409, "session_ended")


def test_deleting_a_continued_conversation_deletes_every_session_of_its_id(
    world: World,
) -> None:
    first = _put(world, "conv")[1]["session"]["session_id"]
    world.api.say("conv", "first words")
    _end(world, "conv")
    world.api.say("conv", "second words")
    second = world.api.call("GET", "/sessions/conv")[1]["session"]["session_id"]
    other = world.api.new_session()  # not of the conversation
    assert world.api.call("DELETE", "/sessions/conv")[0] == 204
    for sid in (first, second, "conv"):
        assert world.api.call("GET", f"/sessions/{sid}")[0] == 404
    listed = [s["session_id"] for s in world.api.call("GET", "/sessions")[1]["sessions"]]
    assert listed == [other]


def test_the_purge_takes_the_alias_along(world: World) -> None:
    _put(world, "conv")
    world.api.say("conv", "words")
    assert world.api.call("DELETE", "/sessions/conv")[0] == 204
    world.purger.drain()
    item = world.dynamodb.get_item(
        TableName="sessions",
        Key={schema.SESSION_ID: {"S": schema.alias_key("alice", "conv")}},
        ConsistentRead=True,
    )
    assert "Item" not in item


def test_after_forgetting_everything_the_id_names_a_new_session(world: World) -> None:
    old = _put(world, "conv")[1]["session"]["session_id"]
    world.api.say("conv", "remember me")
    assert world.api.call("DELETE", "/memories")[0] in (202, 204)
    assert world.api.call("GET", "/sessions/conv")[0] == 404
    status, data = _put(world, "conv")
    assert status == 201 and data["session"]["session_id"] != old
    assert _texts(world, "conv") == []


def test_agent_routes_do_not_take_a_users_client_id(world: World) -> None:
    _put(world, "conv")
    world.api.say("conv", "/human please")
    # The agent's routes name sessions by the server's id only.
    status, _ = world.api.call("GET", "/agent/sessions/conv", user="agent-1")
    assert status in (403, 404)


def test_put_with_end_previous_ends_a_hundred_open_sessions(world: World) -> None:
    """One TransactWriteItems holds 100 actions: with the alias's put in it, a caller with 98
    open sessions or more got a 500 (101 actions) before the cap counted it."""
    opened = [world.api.new_session() for _ in range(100)]
    status, data = _put(world, "conv", {"end_previous": True})
    assert status == 201, data
    assert data["session"]["client_id"] == "conv"
    statuses = {getattr(world.memory.get_session(sid), "status", None) for sid in opened}
    assert statuses == {schema.SessionStatus.ENDED}


# --- a delete racing a message that continues the conversation (issue 46) -------------------------


def _gone(world: World, *texts: str) -> None:
    """Nothing of the conversation is readable: not by its id, not in any listed session."""
    assert world.api.call("GET", "/sessions/conv")[0] == 404
    assert world.api.call("GET", "/sessions/conv/messages")[0] == 404
    for listed in world.api.call("GET", "/sessions")[1]["sessions"]:
        for text in texts:
            assert text not in _texts(world, listed["session_id"]), listed


def _ended_conversation(world: World) -> str:
    first = _put(world, "conv")[1]["session"]["session_id"]
    world.api.say("conv", "the first words")
    _end(world, "conv")
    return first


def test_a_delete_between_a_messages_read_and_its_continuation_wins(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: the message read the ended session, the delete answered 204, and then the
    message's continuation was written anyway (continuing a session being deleted): the id
    named a live session holding the message."""
    _ended_conversation(world)
    memory = world.memory
    real = memory.create_session
    deletes: list[int] = []

    def delete_first(session: Any, creation: Any) -> None:
        monkeypatch.setattr(memory, "create_session", real)
        deletes.append(world.api.call("DELETE", "/sessions/conv")[0])
        real(session, creation)

    monkeypatch.setattr(memory, "create_session", delete_first)
    status, data = world.api.call("POST", "/sessions/conv/messages", {"content": "raced words"})
    assert deletes == [204]
    assert status == 404, data
    _gone(world, "raced words", "the first words")


def test_a_continuation_written_before_the_deletes_tombstones_is_deleted_too(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: the delete read the conversation, the message continued it, then the
    delete marked the sessions it had read and answered 204: the continuation, holding the
    message, stayed under the id."""
    _ended_conversation(world)
    memory = world.memory
    real = memory.mark_deleting
    sent: list[int] = []

    def message_first(session_id: str, at: str) -> bool:
        monkeypatch.setattr(memory, "mark_deleting", real)
        sent.append(world.api.call("POST", "/sessions/conv/messages", {"content": "raced"})[0])
        return real(session_id, at)

    monkeypatch.setattr(memory, "mark_deleting", message_first)
    assert world.api.call("DELETE", "/sessions/conv")[0] == 204
    assert sent == [200]  # answered before the delete did; deleted with the conversation
    _gone(world, "raced", "the first words")
    # The id is free, as after any delete.
    status, data = _put(world, "conv")
    assert status == 201 and data["session"]["continued_from"] is None
