"""ChatMemoryClient's routes against answers recorded from local mode (recorded/local_mode.json):
each call must send the recorded method, path, query and body, and parse the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
import responses
from chatmemory_client import (
    BadRequest,
    ChatMemoryClient,
    Conflict,
    DeletionStatus,
    Feedback,
    HandoffView,
    Memory,
    NotFound,
    PayloadTooLarge,
    Provenance,
    Record,
    Session,
    SessionEnded,
    Turn,
    Unauthorized,
)

from tests.client import recording
from tests.client.recording import LONG_INPUT, REPLAY_URL

RECORDED = recording.load()
TRIP = RECORDED["create_session"][0]["response"]["session"]["session_id"]
COPY = RECORDED["import_session"][0]["response"]["session"]["session_id"]
FACT = RECORDED["remember"][0]["response"]["record"]["record_id"]


@pytest.fixture
def client() -> ChatMemoryClient:
    return ChatMemoryClient(REPLAY_URL, user_id=recording.USER, max_retries=0)


def answer(step: str, index: int = 0) -> Any:
    return RECORDED[step][index]["response"]


def play(http: responses.RequestsMock, *steps: str) -> None:
    for step in steps:
        recording.replay(http, RECORDED[step])


def test_every_request_carries_the_local_user_header(http, client) -> None:
    play(http, "get_session")
    client.get_session(TRIP)
    headers = http.calls[0].request.headers
    assert headers["X-User-Id"] == "alice"
    assert "Authorization" not in headers
    assert headers["User-Agent"].startswith("chatmemory-client/")


def test_create_session_sends_its_name_and_parses_the_session(http, client) -> None:
    play(http, "create_session", "create_session_end_previous")
    session = client.create_session("Trip planning")
    assert session == Session(
        session_id=TRIP,
        name="Trip planning",
        status="OPEN",
        started_at=session.started_at,
        last_active_at=session.last_active_at,
        ended_at=None,
        num_turns=0,
    )
    assert session.started_at.endswith("Z")
    assert client.create_session(end_previous=True).status == "OPEN"


def test_ensure_session_puts_the_callers_id_and_gets_the_same_session_again(http, client) -> None:
    play(http, "ensure_session", "ensure_session_again")
    created = client.ensure_session("user42-conv", "Thread")
    assert (created.client_id, created.name, created.status) == ("user42-conv", "Thread", "OPEN")
    again = client.ensure_session("user42-conv")
    assert again.session_id == created.session_id and again.client_id == "user42-conv"
    assert [c.request.method for c in http.calls] == ["PUT", "PUT"]


def test_send_message_retried_with_the_same_client_message_id_returns_the_same_turn(
    http, client
) -> None:
    play(http, "send_message", "send_message_retry")
    first = client.send_message(
        TRIP,
        "I am planning a trip to Lisbon in May with my sister Ana",
        client_message_id="m-1",
        window_turns=4,
    )
    again = client.send_message(
        TRIP,
        "I am planning a trip to Lisbon in May with my sister Ana",
        client_message_id="m-1",
        window_turns=4,
    )
    assert first == again
    assert (first.turn, first.origin, first.pending, first.client_message_id) == (
        1,
        "chat",
        False,
        "m-1",
    )
    assert first.response and first.response.startswith("[offline responder]")


def test_store_turn_sends_response_created_at_and_metadata(http, client) -> None:
    play(http, "store_turn", "store_turn_retry")
    kwargs: dict[str, Any] = {
        "response": "Light clothes and good walking shoes.",
        "client_message_id": "t-2",
        "created_at": "2026-05-01T10:00:00Z",
        "metadata": {"agent": "planner", "step": 2, "confident": True, "score": 0.5},
    }
    stored = client.store_turn(TRIP, "What should I pack for Lisbon?", **kwargs)
    assert stored == client.store_turn(TRIP, "What should I pack for Lisbon?", **kwargs)
    assert http.calls[0].response.status_code == 201
    assert http.calls[1].response.status_code == 200
    assert stored.origin == "client"
    assert stored.created_at == "2026-05-01T10:00:00.000Z"
    assert stored.metadata == {"agent": "planner", "step": 2, "confident": True, "score": 0.5}


def test_store_turn_sends_messages_and_reads_them_back_verbatim(http, client) -> None:
    play(http, "store_turn_with_messages")
    stored = client.store_turn(
        "user42-conv",
        "Is it warm in May?",
        response="Around 22 °C.",
        client_message_id="t-messages",
        messages=recording.TURN_MESSAGES,
    )
    assert stored.messages == tuple(recording.TURN_MESSAGES)


def test_a_pending_turn_is_completed_once_with_patch(http, client) -> None:
    play(
        http,
        "store_turn_pending",
        "get_turn",
        "complete_turn",
        "complete_turn_again",
        "complete_turn_conflict",
        "complete_turn_metadata",
    )
    pending = client.store_turn(TRIP, "And the weather in May?", client_message_id="t-3")
    assert (pending.turn, pending.pending, pending.response) == (3, True, None)
    assert client.get_turn(TRIP, 3) == pending
    done = client.complete_turn(TRIP, 3, "Mostly sunny, around 22 °C.")
    assert (done.pending, done.response) == (False, "Mostly sunny, around 22 °C.")
    assert client.complete_turn(TRIP, 3, "Mostly sunny, around 22 °C.") == done
    with pytest.raises(Conflict) as conflict:
        client.complete_turn(TRIP, 3, "Rainy.")
    assert conflict.value.code == "conflict"
    relabelled = client.complete_turn(
        TRIP, 2, "Light clothes and good walking shoes.", metadata={"agent": "editor"}
    )
    assert relabelled.metadata == {"agent": "editor"}
    assert http.calls[2].request.method == "PATCH"


def test_feedback_is_put_and_parsed(http, client) -> None:
    play(http, "set_feedback", "set_feedback_invalid")
    rated = client.set_feedback(TRIP, 3, "up", "helpful")
    assert rated.feedback == Feedback(rating="up", comment="helpful", at=rated.feedback.at)
    assert rated.feedback.at
    with pytest.raises(BadRequest, match="rating"):
        client.set_feedback(TRIP, 3, "meh")


def test_list_turns_follows_next_token_to_the_last_page(http, client) -> None:
    play(http, "list_turns_paged", "list_turns_desc")
    turns = list(client.list_turns(TRIP, page_size=2))
    assert [t.turn for t in turns] == [1, 2, 3]
    assert all(isinstance(t, Turn) for t in turns)
    assert "next_token=" in http.calls[1].request.url
    assert [t.turn for t in client.list_turns(TRIP, order="desc")] == [3, 2, 1]


def test_list_sessions_follows_next_token_newest_first(http, client) -> None:
    play(http, "list_sessions_paged", "get_session")
    names = [s.name for s in client.list_sessions(page_size=1)]
    assert len(http.calls) == 5
    # The fourth: the LangGraph thread's, named by its start (graph-thread's first checkpoint).
    assert sorted(names)[:1] + sorted(names)[2:] == ["Packing list", "Thread", "Trip planning"]
    assert sorted(names)[1].startswith("Session ")
    assert client.get_session(TRIP).num_turns == 3


def test_errors_of_local_mode_map_to_their_classes(http, client) -> None:
    play(
        http,
        "store_turn_reused_id",
        "get_turn_missing",
        "get_session_missing",
        "send_message_too_long",
        "store_turn_blank",
        "store_turn_ended",
        "send_message_ended",
        "get_record_missing",
        "delete_session_missing",
    )
    with pytest.raises(Conflict, match="already used"):
        client.store_turn(TRIP, "Another", client_message_id="t-2")
    with pytest.raises(NotFound) as turn_missing:
        client.get_turn(TRIP, 99)
    assert (turn_missing.value.status, turn_missing.value.code) == (404, "turn_not_found")
    with pytest.raises(NotFound) as session_missing:
        client.get_session("no-such-session")
    assert session_missing.value.code == "session_not_found"
    with pytest.raises(PayloadTooLarge):
        client.send_message(TRIP, LONG_INPUT, client_message_id="m-long")
    with pytest.raises(BadRequest, match="must not be empty"):
        client.store_turn(TRIP, "   ", client_message_id="t-blank")
    with pytest.raises(SessionEnded):
        client.store_turn(TRIP, "Still there?", client_message_id="t-9")
    with pytest.raises(SessionEnded) as ended:
        client.send_message(TRIP, "Still there?", client_message_id="m-9")
    assert isinstance(ended.value, Conflict)
    assert str(ended.value).endswith("(HTTP 409, session_ended)")
    with pytest.raises(NotFound) as record_missing:
        client.get_record("no-such-record")
    assert record_missing.value.code == "record_not_found"
    with pytest.raises(NotFound):
        client.delete_session(COPY)


def test_export_then_import_sends_the_document_back(http, client) -> None:
    play(http, "export_session", "import_session")
    document = client.export_session(TRIP)
    assert document["format"] == "chatmemory.session.v1"
    assert len(document["messages"]) == 3
    copy = client.import_session(document)
    assert copy.session_id == COPY and copy.num_turns == 3


def test_end_session_twice_answers_the_ended_session(http, client) -> None:
    play(http, "end_session", "end_session_again")
    ended = client.end_session(TRIP)
    assert ended.status == "ENDED" and ended.ended_at
    assert client.end_session(TRIP) == ended
    assert http.calls[0].request.body is None


def test_search_memories_sends_the_query_with_spaces_as_percent_20(http, client) -> None:
    play(http, "search_memories")
    found = client.search_memories("trip to Lisbon with Ana", k=3)
    assert "q=trip%20to%20Lisbon%20with%20Ana&k=3" in http.calls[0].request.url
    assert [type(m) for m in found] == [Memory]
    assert found[0].session_id == TRIP
    assert found[0].title == "Trip planning"
    assert any("Lisbon" in s for s in found[0].snippets)


def test_records_routes(http, client) -> None:
    play(
        http,
        "remember",
        "remember_keyed",
        "remember_keyed_again",
        "get_record",
        "correct_record",
        "list_records_paged",
        "search_records",
        "delete_record",
    )
    fact = client.remember("I live in Porto", type="fact")
    assert (fact.type, fact.origin, fact.status) == ("fact", "stated", "ACTIVE")
    keyed = client.remember("I prefer green tea", type="preference", record_id="pref:tea")
    replaced = client.remember("I prefer black tea", type="preference", record_id="pref:tea")
    assert keyed.record_id == replaced.record_id == "pref:tea"
    assert replaced.text == "I prefer black tea"
    assert client.get_record("pref:tea") == replaced
    assert http.calls[3].request.path_url == "/memories/records/pref%3Atea"
    corrected = client.correct_record(FACT, "I live in Porto, near the river")
    assert (corrected.text, corrected.origin) == ("I live in Porto, near the river", "corrected")
    facts = list(client.list_records(type="fact", page_size=1))
    assert facts and all(isinstance(r, Record) and r.type == "fact" for r in facts)
    assert any(r.provenance and isinstance(r.provenance[0], Provenance) for r in facts)
    found = client.search_records("what tea do I like", type="preference", limit=2)
    assert [r.record_id for r in found][:1] == ["pref:tea"]
    client.delete_record(FACT)


def test_deleting_and_forgetting(http, client) -> None:
    play(
        http, "delete_session", "deletion_status", "forget_everything", "list_sessions_after_forget"
    )
    assert client.delete_session(COPY) is None
    status = client.deletion_status()
    assert isinstance(status, DeletionStatus) and status.complete is False
    assert client.forget_everything() is None
    assert list(client.list_sessions()) == []


def test_hand_off_to_a_person_and_back(http) -> None:
    play(
        http,
        "request_handoff",
        "send_message_for_agent",
        "list_handoffs",
        "read_handoff",
        "agent_reply",
        "hand_back",
        "hand_back_again",
        "list_handoffs_as_user",
    )
    user = ChatMemoryClient(REPLAY_URL, user_id=recording.USER, max_retries=0)
    agent = ChatMemoryClient(REPLAY_URL, user_id=recording.AGENT, max_retries=0)
    parcel = answer("request_handoff")["session"]["session_id"]
    handed = user.request_handoff(parcel, note="a lost parcel")
    assert (handed.handoff_state, handed.handoff_reason) == ("WAITING", "user_request")
    waiting = user.send_message(parcel, "It was order 1234", client_message_id="p-2")
    assert (waiting.for_agent, waiting.response, waiting.pending) == (True, None, False)
    [queued] = list(agent.list_handoffs(state="WAITING", page_size=5))
    assert queued.session_id == parcel and queued.user_id == recording.USER
    view = agent.read_handoff(parcel, page_size=5)
    assert isinstance(view, HandoffView) and view.session.session_id == parcel
    assert [t.turn for t in view.messages] == [2, 1]  # newest first
    reply = agent.agent_reply(parcel, "Order 1234 arrives tomorrow.", client_message_id="a-1")
    assert (reply.origin, reply.agent_id, reply.input) == ("agent", recording.AGENT, "")
    assert agent.hand_back(parcel).handoff_state is None
    with pytest.raises(Conflict):
        agent.hand_back(parcel)
    with pytest.raises(Unauthorized) as refused:
        list(user.list_handoffs())
    assert (refused.value.status, refused.value.code) == (403, "forbidden")
    assert http.calls[0].request.headers["X-User-Id"] == "alice"
    assert http.calls[2].request.headers["X-User-Id"] == "agent"


def test_records_for_an_agent_and_a_run(http, client) -> None:
    play(http, "remember_for_agent", "find_records_of_agent")
    stated = client.remember("Prefers answers by email", agent_id="support-bot", run_id="r7")
    assert json.loads(http.calls[0].request.body) == {
        "text": "Prefers answers by email",
        "agent_id": "support-bot",
        "run_id": "r7",
    }
    assert (stated.agent_id, stated.run_id) == ("support-bot", "r7")
    assert stated.namespace == ("agent", "support-bot", "run", "r7")
    [found] = client.find_records(query="email", agent_id="support-bot")
    assert json.loads(http.calls[1].request.body)["agent_id"] == "support-bot"
    assert "run_id" not in json.loads(http.calls[1].request.body)
    assert found.record_id == stated.record_id and found.score is not None
    with pytest.raises(ValueError):
        client.remember("x", agent_id="a/b")


def test_record_searches_cut_by_the_answers_size_are_completed_by_the_client(http, client) -> None:
    """The server leaves to a next request the records that do not fit one answer (6 MB): the
    client asks for the rest, so a caller (LangGraph's store) gets what it asked for."""
    fact = answer("remember")["record"]
    first, second, third = ({**fact, "record_id": f"r{n}"} for n in range(3))
    url = f"{REPLAY_URL}/memories/records"
    http.add("POST", f"{url}/search", json={"records": [first, second], "next_offset": 12})
    http.add("POST", f"{url}/search", json={"records": [third], "next_offset": None})
    http.add("GET", url, json={"records": [first], "next_token": "t1"})
    http.add("GET", url, json={"records": [second, third], "next_token": None})

    found = client.find_records(query="tea", limit=3, offset=10)
    searched = client.search_records("tea", limit=3)

    assert [r.record_id for r in found] == [r.record_id for r in searched] == ["r0", "r1", "r2"]
    sent = [json.loads(call.request.body) for call in http.calls[:2]]
    assert [(s["offset"], s["limit"]) for s in sent] == [(10, 3), (12, 1)]
    assert "next_token=t1" in http.calls[3].request.url


def test_namespaces_cut_by_the_answers_size_are_completed_by_the_client(http, client) -> None:
    url = f"{REPLAY_URL}/memories/namespaces"
    http.add("POST", url, json={"namespaces": [["a"], ["b"]], "next_offset": 2})
    http.add("POST", url, json={"namespaces": [["c"]], "next_offset": None})

    assert client.list_namespaces(limit=5) == [("a",), ("b",), ("c",)]
    sent = [json.loads(call.request.body) for call in http.calls]
    assert [(s["offset"], s["limit"]) for s in sent] == [(0, 5), (2, 3)]
