"""The store-only API (an agent keeps its memory here and answers with its own model): POST
/sessions/{id}/turns, GET and PATCH /sessions/{id}/turns/{turn}, feedback on a turn, and records
under a client's own id - through the chat Lambda on moto with the embedded index."""

from __future__ import annotations

from typing import Any

import pytest

from chatmemory import schema
from tests.records_helpers import World, at, chat_world, consolidate, entries

QUESTION = "Which hiking boots did I buy for the Dolomites trip?"
ANSWER = "You bought the Lowa Renegade boots in size 43."


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    return chat_world(dynamodb, monkeypatch, lambda_context)


def _store(world: World, sid: str, user: str = "alice", **body: Any) -> tuple[int, Any]:
    return world.api.call("POST", f"/sessions/{sid}/turns", body, user=user)


def _stored(world: World, sid: str, **body: Any) -> dict[str, Any]:
    status, data = _store(world, sid, **body)
    assert status == 201, data
    return data["turn"]


def _patch(world: World, sid: str, turn: int, user: str = "alice", **body: Any) -> Any:
    return world.api.call("PATCH", f"/sessions/{sid}/turns/{turn}", body, user=user)


def test_a_stored_turn_calls_no_model_and_numbers_on_with_chat_turns(world: World) -> None:
    sid = world.api.new_session()
    world.api.say(sid, "hello there")
    turn = _stored(
        world, sid, input=QUESTION, response=ANSWER, metadata={"agent": "trip-planner", "step": 2}
    )
    assert world.model.calls == 1  # the chat turn's only
    assert (turn["turn"], turn["origin"], turn["pending"]) == (2, "client", False)
    assert (turn["input"], turn["response"]) == (QUESTION, ANSWER)
    assert turn["metadata"] == {"agent": "trip-planner", "step": 2}
    world.api.say(sid, "thanks")
    status, listed = world.api.call("GET", f"/sessions/{sid}/messages")
    assert status == 200
    assert [(t["turn"], t["origin"]) for t in listed["messages"]] == [
        (1, "chat"),
        (2, "client"),
        (3, "chat"),
    ]
    # The chat turn after it had the stored turn in its window, like any other turn.
    assert ANSWER in world.model.prompts[-1]
    assert world.api.call("GET", f"/sessions/{sid}/turns/2")[1]["turn"] == turn


def test_a_turn_stored_without_its_response_gets_it_once_with_patch(world: World) -> None:
    sid = world.api.new_session()
    waiting = _stored(world, sid, input=QUESTION)
    assert (waiting["pending"], waiting["response"]) == (True, None)
    status, data = _patch(world, sid, 1, response=ANSWER)
    assert status == 200 and (data["turn"]["response"], data["turn"]["pending"]) == (ANSWER, False)
    # The same answer again (a retried PATCH) changes nothing; another one is refused.
    assert _patch(world, sid, 1, response=ANSWER)[0] == 200
    status, data = _patch(world, sid, 1, response="Something else")
    assert (status, data["error"]["code"]) == (409, "conflict")
    # Metadata can be replaced on its own.
    status, data = _patch(world, sid, 1, metadata={"reviewed": True})
    assert status == 200 and data["turn"]["metadata"] == {"reviewed": True}
    assert data["turn"]["response"] == ANSWER


def test_only_a_clients_turn_takes_a_response_and_only_while_its_session_is_open(
    world: World,
) -> None:
    sid = world.api.new_session()
    world.api.say(sid, "hello there")
    status, data = _patch(world, sid, 1, response="my own answer")
    assert (status, data["error"]["code"]) == (409, "conflict")
    _stored(world, sid, input=QUESTION)
    world.api.call("POST", f"/sessions/{sid}/end")
    status, data = _patch(world, sid, 2, response=ANSWER)
    assert (status, data["error"]["code"]) == (409, "session_ended")
    status, data = _store(world, sid, input="one more")
    assert (status, data["error"]["code"]) == (409, "session_ended")
    assert world.api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 2


def test_a_retry_with_the_same_client_message_id_returns_the_stored_turn(world: World) -> None:
    sid = world.api.new_session()
    first = _stored(world, sid, input=QUESTION, client_message_id="m-1")
    status, again = _store(world, sid, input=QUESTION, client_message_id="m-1")
    assert (status, again["turn"]) == (200, first)
    status, data = _store(world, sid, input="another question", client_message_id="m-1")
    assert (status, data["error"]["code"]) == (409, "conflict")
    # The id of a stored turn does not make this service answer it.
    status, data = world.api.call(
        "POST", f"/sessions/{sid}/messages", {"content": QUESTION, "client_message_id": "m-1"}
    )
    assert (status, data["error"]["code"]) == (409, "conflict")
    assert world.model.calls == 0
    assert world.api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 1


def test_a_client_time_is_kept_on_the_turn_but_the_session_is_active_now(world: World) -> None:
    sid = world.api.new_session()
    turn = _stored(world, sid, input=QUESTION, created_at="2026-01-02T08:00:00+01:00")
    assert turn["created_at"] == "2026-01-02T07:00:00.000Z"
    session = world.api.call("GET", f"/sessions/{sid}")[1]["session"]
    # Not idle since January: the sweeper would end it at once otherwise.
    assert session["last_active_at"] > "2026-01-30"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"input": ""}, 400),
        ({"input": "   "}, 400),
        ({"input": "x" * (schema.MAX_INPUT_CHARS_DEFAULT + 1)}, 413),
        ({"input": "q", "response": "x" * 20_001}, 400),
        ({"input": "q", "created_at": "0001-01-01T00:00:00Z"}, 400),
        ({"input": "q", "metadata": {f"k{i}": i for i in range(17)}}, 400),
        ({"input": "q", "metadata": {"nested": {"a": 1}}}, 400),
        ({"input": "q", "metadata": {"list": [1, 2]}}, 400),
        ({"input": "q", "metadata": {"bad key": "v"}}, 400),
        ({"input": "q", "metadata": {"k": "x" * 513}}, 400),
        ({"input": "q", "metadata": {f"k{i}": "x" * 200 for i in range(12)}}, 400),
        ({"input": "q", "metadata": {"big": 2**60}}, 400),
        ({"input": "q", "unknown": 1}, 400),
        ({"response": "only an answer"}, 400),
    ],
)
def test_a_bad_turn_is_refused_and_stores_nothing(world: World, body: Any, status: int) -> None:
    sid = world.api.new_session()
    got, data = _store(world, sid, **body)
    assert got == status, data
    assert world.api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 0


def test_feedback_is_kept_with_the_turn_exported_and_imported_back(world: World) -> None:
    sid = world.api.new_session()
    world.api.say(sid, "hello there")
    _stored(world, sid, input=QUESTION, response=ANSWER, metadata={"channel": "web"})
    world.api.call("POST", f"/sessions/{sid}/end")  # feedback comes after the chat, too
    url = f"/sessions/{sid}/turns/1/feedback"
    status, data = world.api.call("PUT", url, {"rating": "down", "comment": "too vague"})
    assert status == 200 and data["turn"]["feedback"]["rating"] == "down"
    status, data = world.api.call("PUT", url, {"rating": "up"})
    assert (
        data["turn"]["feedback"]["rating"] == "up" and data["turn"]["feedback"]["comment"] is None
    )
    assert world.api.call("PUT", url, {"rating": "meh"})[0] == 400
    assert world.api.call("PUT", f"/sessions/{sid}/turns/9/feedback", {"rating": "up"})[1] == {
        "error": {"code": "turn_not_found", "message": f"turn 9 of session {sid} not found"}
    }
    status, exported = world.api.call("GET", f"/sessions/{sid}/export")
    first, second = exported["messages"]
    assert first["feedback"]["rating"] == "up" and first["origin"] == "chat"
    assert (second["origin"], second["metadata"], second["feedback"]) == (
        "client",
        {"channel": "web"},
        None,
    )
    status, imported = world.api.call("POST", "/sessions/import", exported)
    assert status == 201, imported
    copy = imported["session"]["session_id"]
    again = world.api.call("GET", f"/sessions/{copy}/export")[1]["messages"]
    keep = ("input", "response", "origin", "metadata", "feedback")
    assert [{k: m[k] for k in keep} for m in again] == [
        {k: m[k] for k in keep} for m in exported["messages"]
    ]


def test_another_callers_turns_are_not_found(world: World) -> None:
    sid = world.api.new_session()
    _stored(world, sid, input=QUESTION, response=ANSWER)
    for method, path, body in [
        ("POST", f"/sessions/{sid}/turns", {"input": "mine now"}),
        ("GET", f"/sessions/{sid}/turns/1", None),
        ("PATCH", f"/sessions/{sid}/turns/1", {"metadata": {}}),
        ("PUT", f"/sessions/{sid}/turns/1/feedback", {"rating": "down"}),
    ]:
        status, data = world.api.call(method, path, body, user="mallory")
        assert (status, data["error"]["code"]) == (404, "session_not_found")
    turn = world.api.call("GET", f"/sessions/{sid}/turns/1")[1]["turn"]
    assert (turn["metadata"], turn["feedback"]) == ({}, None)
    assert world.api.call("GET", f"/sessions/{sid}/turns/0")[0] == 400
    assert world.api.call("GET", f"/sessions/{sid}/turns/two")[0] == 400


def test_stored_turns_are_consolidated_and_recalled_like_chat_turns(world: World) -> None:
    sid = world.api.new_session()
    _stored(world, sid, input="I bought Lowa Renegade boots for the Dolomites trip", response="ok")
    _stored(world, sid, input="We leave for the Dolomites on 12 July")
    world.api.call("POST", f"/sessions/{sid}/end")
    assert consolidate(world.memory, world.index, sid, now=at(30)).outcome == "consolidated"
    indexed = " ".join(str(e["text"]) for e in entries(world.index, "alice").values())
    assert "Lowa Renegade" in indexed and "12 July" in indexed
    status, found = world.api.call("GET", "/memories", query={"q": "Dolomites boots"})
    assert status == 200 and [m["session_id"] for m in found["memories"]] == [sid]


# --- records under the client's own id (a LangGraph store's keys) -----------------------------


def test_a_record_under_a_client_id_is_created_then_replaced_and_read_by_id(world: World) -> None:
    body = {"text": "I prefer window seats", "record_id": "prefs.seat"}
    status, created = world.api.call("POST", "/memories/records", body)
    assert status == 201 and created["record"]["record_id"] == "prefs.seat"
    assert world.api.call("POST", "/memories/records", body)[0] == 200  # the same: a no-op
    status, replaced = world.api.call(
        "POST", "/memories/records", {"text": "I prefer aisle seats", "record_id": "prefs.seat"}
    )
    assert status == 200
    assert (replaced["record"]["text"], replaced["record"]["origin"]) == (
        "I prefer aisle seats",
        "corrected",
    )
    status, read = world.api.call("GET", "/memories/records/prefs.seat")
    assert status == 200 and read["record"] == replaced["record"]
    assert world.api.call("GET", "/memories/records/prefs.seat", user="mallory")[0] == 404
    bad = {"text": "x", "record_id": "no spaces please"}
    assert world.api.call("POST", "/memories/records", bad)[0] == 400


def test_a_keyed_record_is_never_merged_into_another(world: World) -> None:
    world.state("I love green tea in the morning")
    world.state("I love green tea in the morning", record_id="tea")  # 201, its own record
    ids = [r["record_id"] for r in world.listed() if r["text"] == "I love green tea in the morning"]
    assert len(ids) == 2 and "tea" in ids


def test_a_deleted_client_id_is_free_at_once_and_its_old_text_stays_gone(world: World) -> None:
    """Failed before: the id answered 409 until the records stream's purge had run."""
    world.state("I prefer window seats", record_id="seat")
    assert world.api.call("DELETE", "/memories/records/seat")[0] == 204
    status, data = world.api.call(
        "POST", "/memories/records", {"text": "I prefer aisle seats", "record_id": "seat"}
    )
    assert (status, data["record"]["text"]) == (201, "I prefer aisle seats")
    for _ in range(2):  # before and after the (late) purge of the deleted record
        assert "window" not in world.recalled("Which seats do I prefer?")[1]
        assert "aisle" in world.recalled("Which seats do I prefer?")[1]
        assert world.searched("window seats") == ["seat"]  # the new record, by its words
        texts = [e["text"] for e in entries(world.index, "alice").values()]
        assert "I prefer window seats" not in texts and "I prefer aisle seats" in texts
        world.purger.drain()


def test_two_callers_may_choose_the_same_record_id_and_keep_their_own(world: World) -> None:
    """Record ids are unique per caller only: the index keys entries by owner too, so one
    caller's record under "seat" never replaces, hides or deletes another's."""
    world.state("I prefer window seats on long flights", record_id="seat")
    world.state("I prefer aisle seats on long flights", record_id="seat", user="bob")
    assert world.searched("which seats do I prefer on flights") == ["seat"]
    assert world.searched("which seats do I prefer on flights", user="bob") == ["seat"]
    assert "window" in world.recalled("Which seats do I prefer on long flights?")[1]
    assert "aisle" in world.recalled("Which seats do I prefer on long flights?", user="bob")[1]
    assert world.api.call("DELETE", "/memories/records/seat", user="bob")[0] == 204
    world.purger.drain()
    assert "window" in world.recalled("Which seats do I prefer on long flights?")[1]
    assert world.searched("which seats do I prefer on flights") == ["seat"]
    keys = set(entries(world.index, "alice"))
    assert any(k.startswith("record#alice#seat") for k in keys)
    assert not any("bob" in key for key in keys)


def test_a_stored_turn_expires_and_is_kept_by_the_configured_rules_as_a_chat_turn(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed first: POST /turns wrote its turns with the default append policy and no expiry,
    so TURN_TTL_DAYS never expired them (and KEEP_MESSAGE_IDS did not apply to them)."""
    from chatmemory import wiring

    settings = wiring.settings().replace(turn_ttl_days=7, keep_message_ids=2)
    monkeypatch.setattr(wiring, "settings", lambda: settings)
    sid = world.api.new_session()
    for i in range(3):
        status, _ = world.api.call(
            "POST", f"/sessions/{sid}/turns", {"input": f"q{i}", "client_message_id": f"m{i}"}
        )
        assert status == 201
    stored = world.deps.memory.get_turn(sid, 1)
    now = int(world.deps.clock().timestamp())
    assert stored is not None and stored.expires_at is not None
    assert 7 * 86_400 - 60 <= stored.expires_at - now <= 7 * 86_400
    session = world.deps.memory.get_session(sid)
    assert session is not None and len(session.recent_messages) == 2
