"""ChatMemoryClient.stream_message against answers recorded from local mode, and its event
stream parser against what the standard allows a server to write (comments, multi-line data,
any line end, cut anywhere)."""

from __future__ import annotations

import json

import pytest
import responses
from chatmemory_client import (
    ChatMemoryClient,
    ConnectionFailed,
    DeltaEvent,
    ErrorEvent,
    MemoryEvent,
    ServerError,
    SessionEnded,
    Turn,
    TurnEvent,
    Unavailable,
)
from chatmemory_client.sse import ServerSentEvent, events

from tests.client import recording
from tests.client.recording import REPLAY_URL

RECORDED = recording.load()
STREAMED = RECORDED["stream_message"][0]
CHAT = STREAMED["path"].split("/")[2]
TRIP = RECORDED["create_session"][0]["response"]["session"]["session_id"]
STREAM_URL = f"{REPLAY_URL}/sessions/{CHAT}/messages/stream"


@pytest.fixture
def client() -> ChatMemoryClient:
    return ChatMemoryClient(REPLAY_URL, user_id=recording.USER, max_retries=0)


def stream_porto(client: ChatMemoryClient):  # type: ignore[no-untyped-def]
    return client.stream_message(
        CHAT, "Tell me about Porto", client_message_id="s-1", window_turns=4
    )


def test_stream_message_yields_memory_then_deltas_then_the_stored_turn(http, client) -> None:
    recording.replay(http, RECORDED["stream_message"])
    with stream_porto(client) as stream:
        got = list(stream)
    assert http.calls[0].request.headers["Accept"] == "text/event-stream"
    assert isinstance(got[0], MemoryEvent) and isinstance(got[-1], TurnEvent)
    deltas = got[1:-1]
    assert len(deltas) > 1 and all(isinstance(e, DeltaEvent) for e in deltas)
    turn = got[-1].turn
    assert "".join(e.text for e in deltas) == turn.response == stream.text
    assert stream.turn == turn and stream.closed
    recorded_turn = STREAMED["response"][-1]["data"]["turn"]
    assert turn == Turn.from_json(recorded_turn)
    assert (turn.turn, turn.client_message_id, turn.stopped) == (1, "s-1", False)


def test_a_retried_stream_replays_the_stored_answer_as_one_delta(http, client) -> None:
    play = RECORDED["stream_message"] + RECORDED["stream_message_retry"]
    recording.replay(http, play)
    first = stream_porto(client).collect()
    with stream_porto(client) as again:
        got = list(again)
    assert [type(e) for e in got] == [DeltaEvent, TurnEvent]
    assert got[0].text == first.response and got[1].turn == first


def test_a_refused_message_raises_before_any_event_as_send_message_does(http, client) -> None:
    recording.replay(http, RECORDED["stream_message_ended"])
    with pytest.raises(SessionEnded) as refused:
        client.stream_message(TRIP, "Still there?", client_message_id="s-9")
    assert refused.value.status == 409


def sse_answer(http: responses.RequestsMock, body: str | bytes, status: int = 200) -> None:
    http.add(responses.POST, STREAM_URL, body=body, status=status, content_type="text/event-stream")


def turn_json(response: str) -> str:
    envelope = {"turn": {"turn": 1, "input": "Hi", "response": response}, "answer": None}
    return json.dumps(envelope)


def test_an_error_after_the_stream_started_is_a_typed_error_event(http, client) -> None:
    error = {"status": 503, "error": {"code": "model_unavailable", "message": "try later"}}
    sse_answer(
        http,
        'event: delta\ndata: {"text":"Hel"}\n\nevent: error\ndata: ' + json.dumps(error) + "\n\n",
    )
    with client.stream_message(CHAT, "Hi") as stream:
        first, failed = list(stream)
    assert first == DeltaEvent("Hel")
    assert isinstance(failed, ErrorEvent) and isinstance(failed.error, Unavailable)
    assert (failed.error.status, failed.error.code) == (503, "model_unavailable")
    assert stream.turn is None


def test_collect_raises_the_error_event_and_returns_the_turn_otherwise(http, client) -> None:
    error = {"status": 500, "error": {"code": "internal_error", "message": "boom"}}
    sse_answer(http, f"event: error\ndata: {json.dumps(error)}\n\n")
    sse_answer(
        http, f'event: delta\ndata: {{"text":"Hi!"}}\n\nevent: turn\ndata: {turn_json("Hi!")}\n\n'
    )
    with pytest.raises(ServerError):
        client.stream_message(CHAT, "Hi").collect()
    assert client.stream_message(CHAT, "Hi").collect().response == "Hi!"


def test_a_stream_that_ends_before_its_turn_is_a_connection_failure(http, client) -> None:
    sse_answer(http, 'event: delta\ndata: {"text":"Hel"}\n\n')
    stream = client.stream_message(CHAT, "Hi")
    assert next(stream) == DeltaEvent("Hel")
    with pytest.raises(ConnectionFailed):
        next(stream)
    assert stream.closed


def test_an_unavailable_server_before_the_first_byte_is_retried_with_the_same_message_id(
    http, waits
) -> None:
    http.add(responses.POST, STREAM_URL, status=503, json={"error": {"code": "unavailable"}})
    sse_answer(http, f"event: turn\ndata: {turn_json('Hi!')}\n\n")
    client = ChatMemoryClient(REPLAY_URL, user_id="alice", max_retries=1)
    turn = client.stream_message(CHAT, "Hi").collect()
    assert turn.response == "Hi!" and len(waits) == 1
    sent = [json.loads(call.request.body)["client_message_id"] for call in http.calls]
    assert sent[0] == sent[1]


def test_events_a_newer_server_adds_are_skipped(http, client) -> None:
    body = f'event: usage\ndata: {{"tokens": 3}}\n\nevent: turn\ndata: {turn_json("ok")}\n\n'
    sse_answer(http, body)
    assert [type(e) for e in client.stream_message(CHAT, "Hi")] == [TurnEvent]


# --- the event stream parser ------------------------------------------------------------------


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    return list(events(chunks))


def test_comments_are_skipped_and_data_lines_are_joined_with_newlines() -> None:
    stream = b": ping\n\nevent: delta\ndata: line one\ndata:line two\n: ping\ndata:  indented\n\n"
    assert parse(stream) == [ServerSentEvent("delta", "line one\nline two\n indented")]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_the_standard_allows_cut_at_every_byte(end: bytes) -> None:
    text = 'event: delta\ndata: {"text": "caf\u00e9 \u2615"}\n\n: ping\n\nevent: turn\ndata: {}\n\n'
    raw = text.encode().replace(b"\n", end)
    whole = [
        ServerSentEvent("delta", '{"text": "caf\u00e9 \u2615"}'),
        ServerSentEvent("turn", "{}"),
    ]
    assert parse(raw) == whole
    for cut in range(1, len(raw)):
        assert parse(raw[:cut], raw[cut:]) == whole, cut
    assert parse(*[raw[i : i + 1] for i in range(len(raw))]) == whole


def test_an_event_without_data_or_without_its_blank_line_is_not_dispatched() -> None:
    assert parse(b"event: delta\n\nevent: turn\ndata: {}") == []
    assert parse(b"data: x\n\n") == [ServerSentEvent("message", "x")]
    assert parse(b"id: 7\nevent: e\ndata:\n\n") == [ServerSentEvent("e", "", "7")]
