"""What the client does with answers that are not the API's happy path: error classes for every
status (also for bodies that are not the API's JSON), and which requests it sends again."""

from __future__ import annotations

import json
import socket

import pytest
import requests
from chatmemory_client import (
    BadRequest,
    ChatMemoryClient,
    ChatMemoryError,
    Conflict,
    ConnectionFailed,
    InvalidId,
    NotFound,
    PayloadTooLarge,
    ServerError,
    SessionEnded,
    Unauthorized,
    Unavailable,
)
from urllib3.exceptions import MaxRetryError, NewConnectionError

URL = "https://api.example.test/v1"
TURN = {"turn": {"turn": 1, "input": "hi", "response": None, "pending": True, "origin": "client"}}
SESSION = {"session": {"session_id": "s1", "name": "", "status": "OPEN", "num_turns": 0}}


def error(code: str, message: str = "no") -> dict[str, object]:
    return {"error": {"code": code, "message": message}}


def refused() -> requests.ConnectionError:
    """What requests raises when nothing listens on the port."""
    return requests.ConnectionError(
        MaxRetryError(None, "/", NewConnectionError(None, "Connection refused"))  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("status", "body", "expected", "code"),
    [
        (400, error("bad_request"), BadRequest, "bad_request"),
        (415, error("unsupported_media_type"), BadRequest, "unsupported_media_type"),
        (401, error("unauthorized"), Unauthorized, "unauthorized"),
        (403, {"message": "Forbidden"}, Unauthorized, "forbidden"),
        (404, error("session_not_found"), NotFound, "session_not_found"),
        (409, error("session_ended"), SessionEnded, "session_ended"),
        (409, error("conflict"), Conflict, "conflict"),
        (413, error("payload_too_large"), PayloadTooLarge, "payload_too_large"),
        (500, error("internal_error"), ServerError, "internal_error"),
        (502, error("model_error"), ServerError, "model_error"),
        (503, error("model_unavailable"), Unavailable, "model_unavailable"),
        (429, {"message": "Too Many Requests"}, Unavailable, "throttled"),
        (418, {"unexpected": True}, ChatMemoryError, "http_418"),
    ],
)
def test_each_status_raises_its_error_class(http, status, body, expected, code) -> None:
    sends = 3 if status in (429, 502, 503) else 1  # those are sent again first
    for _ in range(sends):
        http.add("GET", f"{URL}/sessions/s1", json=body, status=status)
    client = ChatMemoryClient(URL, token="t", max_retries=2)
    with pytest.raises(expected) as raised:
        client.get_session("s1")
    assert type(raised.value) is expected
    assert (raised.value.status, raised.value.code) == (status, code)
    assert raised.value.retryable is (expected is Unavailable)


def test_an_html_error_page_becomes_a_server_error_with_its_text(http) -> None:
    http.add(
        "GET",
        f"{URL}/deletions",
        body="<html>Bad Gateway</html>",
        status=502,
        content_type="text/html",
    )
    with pytest.raises(ServerError) as raised:
        ChatMemoryClient(URL, max_retries=0).deletion_status()
    assert (raised.value.code, raised.value.message) == ("bad_gateway", "<html>Bad Gateway</html>")


def test_an_empty_error_body_takes_the_reason_phrase(http) -> None:
    http.add("GET", f"{URL}/deletions", body="", status=504)
    with pytest.raises(ServerError) as raised:
        ChatMemoryClient(URL, max_retries=0).deletion_status()
    assert raised.value.code == "gateway_timeout"
    assert raised.value.message == "Gateway Timeout"


def test_a_long_error_body_is_cut(http) -> None:
    http.add("GET", f"{URL}/deletions", body="x" * 5000, status=500, content_type="text/plain")
    with pytest.raises(ServerError) as raised:
        ChatMemoryClient(URL, max_retries=0).deletion_status()
    assert len(raised.value.message) == 503


def test_a_success_that_is_not_json_is_an_error(http) -> None:
    http.add(
        "GET", f"{URL}/deletions", body="<html>login</html>", status=200, content_type="text/html"
    )
    with pytest.raises(ChatMemoryError, match="not JSON"):
        ChatMemoryClient(URL).deletion_status()


def test_send_message_retried_after_503_keeps_its_generated_client_message_id(http, waits) -> None:
    http.add("POST", f"{URL}/sessions/s1/messages", json=error("model_unavailable"), status=503)
    http.add("POST", f"{URL}/sessions/s1/messages", body=refused())
    http.add("POST", f"{URL}/sessions/s1/messages", json=TURN, status=200)
    turn = ChatMemoryClient(URL, token="t").send_message("s1", "hi")
    assert turn.turn == 1
    sent = [json.loads(call.request.body) for call in http.calls]
    assert len(sent) == 3
    assert (
        sent[0]["client_message_id"] == sent[1]["client_message_id"] == sent[2]["client_message_id"]
    )
    assert len(sent[0]["client_message_id"]) == 36  # a uuid4
    assert len(waits) == 2


def test_two_sends_get_two_client_message_ids(http) -> None:
    http.add("POST", f"{URL}/sessions/s1/messages", json=TURN)
    http.add("POST", f"{URL}/sessions/s1/messages", json=TURN)
    client = ChatMemoryClient(URL)
    client.send_message("s1", "hi")
    client.send_message("s1", "hi")
    ids = {json.loads(call.request.body)["client_message_id"] for call in http.calls}
    assert len(ids) == 2


def test_store_turn_retried_after_a_read_timeout_keeps_the_callers_client_message_id(http) -> None:
    http.add("POST", f"{URL}/sessions/s1/turns", body=requests.ReadTimeout("slow"))
    http.add(
        "POST", f"{URL}/sessions/s1/turns", json=error("short_term_memory_unavailable"), status=504
    )
    http.add("POST", f"{URL}/sessions/s1/turns", json=TURN, status=200)
    ChatMemoryClient(URL).store_turn("s1", "hi", client_message_id="mine")
    assert [json.loads(c.request.body)["client_message_id"] for c in http.calls] == ["mine"] * 3


def test_retries_stop_after_max_retries_with_the_last_error(http, waits) -> None:
    for _ in range(3):
        http.add("GET", f"{URL}/sessions", json=error("short_term_memory_unavailable"), status=503)
    with pytest.raises(Unavailable) as raised:
        list(ChatMemoryClient(URL, max_retries=2).list_sessions())
    assert raised.value.code == "short_term_memory_unavailable"
    assert len(http.calls) == 3
    # Exponential backoff with full jitter: each wait at most 0.5 s * 2**attempt.
    assert len(waits) == 2 and waits[0] <= 0.5 and waits[1] <= 1.0


def test_a_connection_that_keeps_failing_raises_connection_failed(http) -> None:
    for _ in range(2):
        http.add("GET", f"{URL}/deletions", body=refused())
    with pytest.raises(ConnectionFailed) as raised:
        ChatMemoryClient(URL, max_retries=1).deletion_status()
    assert (raised.value.status, raised.value.retryable) == (0, True)
    assert isinstance(raised.value, Unavailable)


def test_retry_after_is_honoured_up_to_a_cap(http, waits) -> None:
    http.add("GET", f"{URL}/deletions", status=429, headers={"Retry-After": "3"})
    http.add("GET", f"{URL}/deletions", status=429, headers={"Retry-After": "600"})
    http.add("GET", f"{URL}/deletions", json={"complete": True})
    assert ChatMemoryClient(URL).deletion_status().complete is True
    assert waits == [3.0, 20.0]


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE", "GET"])
def test_idempotent_methods_are_retried(http, method) -> None:
    path = {
        "PUT": "/sessions/s1/turns/1/feedback",
        "PATCH": "/sessions/s1/turns/1",
        "DELETE": "/memories/records/r1",
        "GET": "/sessions/s1/turns/1",
    }[method]
    http.add(method, URL + path, status=502, body="")
    if method == "DELETE":
        http.add(method, URL + path, status=204, body="")
    else:
        http.add(method, URL + path, json=TURN)
    client = ChatMemoryClient(URL)
    call = {
        "PUT": lambda: client.set_feedback("s1", 1, "down"),
        "PATCH": lambda: client.complete_turn("s1", 1, "hello"),
        "DELETE": lambda: client.delete_record("r1"),
        "GET": lambda: client.get_turn("s1", 1),
    }[method]
    call()
    assert len(http.calls) == 2


def test_creating_a_session_is_not_sent_again_after_a_503(http) -> None:
    http.add("POST", f"{URL}/sessions", json=error("short_term_memory_unavailable"), status=503)
    with pytest.raises(Unavailable):
        ChatMemoryClient(URL).create_session("x")
    assert len(http.calls) == 1


def test_creating_a_session_is_not_sent_again_after_a_read_timeout(http) -> None:
    http.add("POST", f"{URL}/sessions", body=requests.ReadTimeout("slow"))
    with pytest.raises(ConnectionFailed):
        ChatMemoryClient(URL).create_session("x")
    assert len(http.calls) == 1


def test_creating_a_session_is_sent_again_when_it_never_left_or_was_throttled(http) -> None:
    http.add("POST", f"{URL}/sessions", body=refused())
    http.add("POST", f"{URL}/sessions", json={"message": None}, status=429)
    http.add("POST", f"{URL}/sessions", json=SESSION, status=201)
    assert ChatMemoryClient(URL).create_session("x").session_id == "s1"


def test_a_record_is_sent_again_only_with_a_record_id(http) -> None:
    record = {"record": {"record_id": "k", "type": "fact", "text": "t"}}
    http.add(
        "POST", f"{URL}/memories/records", status=503, json=error("long_term_memory_unavailable")
    )
    http.add("POST", f"{URL}/memories/records", status=200, json=record)
    http.add(
        "POST", f"{URL}/memories/records", status=503, json=error("long_term_memory_unavailable")
    )
    client = ChatMemoryClient(URL)
    assert client.remember("t", record_id="k").record_id == "k"
    with pytest.raises(Unavailable):
        client.remember("t")
    assert len(http.calls) == 3


def test_ending_a_session_is_retried(http) -> None:
    http.add(
        "POST", f"{URL}/sessions/s1/end", status=503, json=error("short_term_memory_unavailable")
    )
    http.add("POST", f"{URL}/sessions/s1/end", json=SESSION)
    assert ChatMemoryClient(URL).end_session("s1").session_id == "s1"


def test_max_retries_zero_sends_once(http) -> None:
    http.add("POST", f"{URL}/sessions/s1/messages", status=503, json=error("model_unavailable"))
    with pytest.raises(Unavailable):
        ChatMemoryClient(URL, max_retries=0).send_message("s1", "hi")
    assert len(http.calls) == 1


def test_the_token_is_sent_as_the_authorization_header(http) -> None:
    http.add("GET", f"{URL}/deletions", json={"complete": True})
    ChatMemoryClient(URL + "/", token="eyJ.token").deletion_status()
    request = http.calls[0].request
    assert request.url == f"{URL}/deletions"
    assert request.headers["Authorization"] == "eyJ.token"
    assert "X-User-Id" not in request.headers


def test_ids_are_one_path_segment_each(http) -> None:
    http.add("GET", f"{URL}/sessions/a.b%3Ac/turns/2", json=TURN)
    ChatMemoryClient(URL).get_turn("a.b:c", 2)
    assert http.calls[0].request.path_url == "/v1/sessions/a.b%3Ac/turns/2"
    # What the API would refuse is refused before anything is sent (tests/unit/test_identifiers).
    with pytest.raises(InvalidId):
        ChatMemoryClient(URL).get_turn("a/../b?x", 2)
    assert len(http.calls) == 1


def test_unknown_fields_are_ignored_and_missing_optional_ones_defaulted(http) -> None:
    turn = {
        "turn": {
            "turn": 7,
            "input": "hi",
            "brand_new_field": {"x": 1},
            "sources": [{"kind": "record", "id": "r", "extra": 1}],
        }
    }
    http.add("GET", f"{URL}/sessions/s1/turns/7", json=turn)
    parsed = ChatMemoryClient(URL).get_turn("s1", 7)
    assert (parsed.turn, parsed.response, parsed.metadata, parsed.feedback) == (7, None, {}, None)
    assert parsed.sources[0].kind == "record" and parsed.sources[0].score is None


def test_token_and_iam_together_are_refused() -> None:
    with pytest.raises(ValueError, match="choose one"):
        ChatMemoryClient(URL, token="t", iam=True)


def test_a_client_closes_only_the_session_it_made(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[requests.Session] = []
    monkeypatch.setattr(requests.Session, "close", lambda self: closed.append(self))
    mine = requests.Session()
    with ChatMemoryClient(URL, session=mine):
        pass
    assert closed == []
    with ChatMemoryClient(URL) as client:
        pass
    assert closed == [client._http]


def test_errors_pickle_and_print() -> None:
    import pickle

    raised = SessionEnded(409, "session_ended", "ended")
    again = pickle.loads(pickle.dumps(raised))
    assert (type(again), again.status, again.code, again.message) == (
        SessionEnded,
        409,
        "session_ended",
        "ended",
    )
    assert (
        str(ConnectionFailed(0, "connection_failed", "refused"))
        == "refused (no answer, connection_failed)"
    )


def test_an_unreachable_server_raises_connection_failed_after_the_retries(waits) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ChatMemoryClient(f"http://127.0.0.1:{port}", max_retries=2)
    with pytest.raises(ConnectionFailed):
        client.create_session("nobody listens")
    assert len(waits) == 2  # refused before sending: safe to send again, even a POST


def test_a_message_answered_with_a_later_one_carries_that_answer(http) -> None:
    """Stacked messages: the server answered this message together with the next one."""
    answer = {"turn": 2, "input": "it is order 1234", "response": "Sorry! Order 1234 ships today."}
    http.add(
        "POST",
        f"{URL}/sessions/s1/messages",
        json={
            "turn": {"turn": 1, "input": "my parcel", "response": None, "answered_by": 2},
            "answer": answer,
        },
    )
    http.add(
        "POST",
        f"{URL}/sessions/s1/messages",
        json={"turn": answer},
    )
    client = ChatMemoryClient(URL, user_id="alice")

    first = client.send_message("s1", "my parcel")
    second = client.send_message("s1", "it is order 1234")

    assert (first.response, first.answered_by) == (None, 2)
    assert first.answer is not None and first.answer.turn == 2
    assert first.reply == second.reply == "Sorry! Order 1234 ships today."
    assert second.answer is None and second.answered_by is None
