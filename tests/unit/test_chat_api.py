"""The chat API end to end through the Lambda handler, on moto DynamoDB with a fake model."""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from chatmemory import schema, wiring
from chatmemory.adapters.dynamodb import DynamoShortTermMemory
from chatmemory.services.conversation.chat import NO_LONG_TERM_MEMORY, ChatDeps
from local.gateway import load_routes, proxy_event
from tests.fakes import FakeGenerator, SerializedClient
from tests.purging import Purger


class Api:
    """Calls the chat Lambda with the API Gateway proxy events the local gateway builds (as API
    Gateway does), as a given Cognito user."""

    def __init__(self, handler: Any, context: Any) -> None:
        self._handler = handler
        self._context = context
        self._routes = load_routes()
        self.answer_bytes = 0

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str = "alice",
        query: dict[str, str] | None = None,
        raw: str | None = None,
    ) -> tuple[int, Any]:
        # The event carries the path and query decoded: encode them as a client would.
        target = quote(path, safe="/") + (f"?{urlencode(query)}" if query else "")
        event = proxy_event(
            method=method,
            target=target,
            headers=[("Content-Type", "application/json")],
            body=raw if raw is not None else (None if body is None else json.dumps(body)),
            user_id=user,
            routes=self._routes,
        )
        answer = self._handler(event, self._context)
        # As Lambda's runtime sends it, and as the AWS contract check measures it (6 MiB).
        self.answer_bytes = len(json.dumps(answer, default=str).encode())
        text = answer.get("body")
        return answer["statusCode"], json.loads(text) if text else None

    def new_session(self, user: str = "alice", **body: Any) -> str:
        status, data = self.call("POST", "/sessions", body or None, user=user)
        assert status == 201
        return data["session"]["session_id"]

    def say(self, session_id: str, content: str, user: str = "alice", **extra: Any) -> Any:
        status, data = self.call(
            "POST", f"/sessions/{session_id}/messages", {"content": content, **extra}, user=user
        )
        assert status == 200, data
        return data["turn"]


@pytest.fixture
def model() -> FakeGenerator:
    return FakeGenerator()


@pytest.fixture
def api(dynamodb: Any, model: FakeGenerator, monkeypatch: pytest.MonkeyPatch, lambda_context):
    from handlers import chat_api

    deps = ChatDeps(memory=wiring.short_term_memory(), generator=model)
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return Api(chat_api.handler, lambda_context)


def _turn_items(dynamodb: Any, session_id: str) -> list[dict[str, Any]]:
    answer = dynamodb.query(
        TableName="conversations",
        KeyConditionExpression="session_id = :s",
        ExpressionAttributeValues={":s": {"S": session_id}},
    )
    return answer["Items"]


# --- sessions ---------------------------------------------------------------------------------


def test_created_session_is_open_and_readable(api: Api) -> None:
    status, data = api.call("POST", "/sessions", {"name": "Trip planning"})
    assert status == 201
    session = data["session"]
    assert session["name"] == "Trip planning"
    assert session["status"] == "OPEN"
    assert session["num_turns"] == 0 and session["ended_at"] is None
    assert set(session) == {
        "session_id",
        "name",
        "status",
        "started_at",
        "last_active_at",
        "ended_at",
        "num_turns",
        "continued_from",
        "handoff_state",
        "handoff_reason",
        "handoff_at",
        "handoff_agent",
        "handoff_note",
        "client_id",
    }
    assert session["continued_from"] is None and session["handoff_state"] is None
    status, data = api.call("GET", f"/sessions/{session['session_id']}")
    assert status == 200 and data["session"] == session


def test_create_with_end_previous_ends_only_the_callers_open_sessions(api: Api) -> None:
    first = api.new_session()
    bobs = api.new_session(user="bob")
    second = api.new_session(end_previous=True)
    assert api.call("GET", f"/sessions/{first}")[1]["session"]["status"] == "ENDED"
    assert api.call("GET", f"/sessions/{second}")[1]["session"]["status"] == "OPEN"
    assert api.call("GET", f"/sessions/{bobs}", user="bob")[1]["session"]["status"] == "OPEN"


def test_sessions_are_listed_newest_first_across_pages(api: Api) -> None:
    created = [api.new_session(name=f"s{i}") for i in range(5)]
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        query = {"limit": "2", **({"next_token": token} if token else {})}
        status, data = api.call("GET", "/sessions", query=query)
        assert status == 200
        seen += [s["session_id"] for s in data["sessions"]]
        pages += 1
        token = data["next_token"]
        if not token:
            break
    assert seen == list(reversed(created))
    assert pages == 3


def test_a_next_token_cannot_page_through_another_users_sessions(api: Api) -> None:
    for _ in range(3):
        api.new_session(user="bob")
    _, page = api.call("GET", "/sessions", user="bob", query={"limit": "1"})
    status, data = api.call("GET", "/sessions", query={"next_token": page["next_token"]})
    assert status == 400 and data["error"]["code"] == "bad_request"
    status, _ = api.call("GET", "/sessions", query={"next_token": "not-a-token!"})
    assert status == 400


def test_ending_a_session_is_idempotent_and_blocks_new_messages(api: Api, model) -> None:
    sid = api.new_session()
    status, data = api.call("POST", f"/sessions/{sid}/end")
    assert status == 200 and data["session"]["status"] == "ENDED"
    assert data["session"]["ended_at"]
    status, again = api.call("POST", f"/sessions/{sid}/end")
    assert status == 200 and again["session"] == data["session"]
    status, err = api.call("POST", f"/sessions/{sid}/messages", {"content": "hello?"})
    assert status == 409 and err["error"]["code"] == "session_ended"
    assert model.calls == 0


def test_deleting_a_session_hides_it_at_once_and_the_purge_removes_it_and_all_its_turns(
    api: Api, dynamodb, monkeypatch: pytest.MonkeyPatch, lambda_context
) -> None:
    sid = api.new_session()
    for i in range(30):
        api.say(sid, f"message {i}")
    keep = api.new_session()
    api.say(keep, "still here")
    purger = Purger(dynamodb, wiring.chat_deps().memory, None, monkeypatch, lambda_context)
    status, body = api.call("DELETE", f"/sessions/{sid}")
    assert status == 204 and body is None
    for method, path in (("GET", ""), ("GET", "/messages"), ("GET", "/export")):
        assert api.call(method, f"/sessions/{sid}{path}")[0] == 404
    assert sid not in [s["session_id"] for s in api.call("GET", "/sessions")[1]["sessions"]]
    assert api.call("POST", f"/sessions/{sid}/messages", {"content": "late"})[0] == 404
    assert api.call("GET", "/deletions")[1] == {
        "complete": False,
        "sessions_pending": 1,
        "forget_requests_pending": 0,
    }
    purger.drain()
    assert _turn_items(dynamodb, sid) == []
    assert "Item" not in dynamodb.get_item(TableName="sessions", Key={"session_id": {"S": sid}})
    assert len(_turn_items(dynamodb, keep)) == 1
    assert api.call("GET", "/deletions")[1]["complete"] is True


# --- messages ---------------------------------------------------------------------------------


def test_a_message_is_answered_and_stored_as_the_next_turn(api: Api, model, dynamodb) -> None:
    sid = api.new_session()
    turn = api.say(sid, "Hi, I am planning a trip to Lisbon")
    assert turn["turn"] == 1
    assert turn["input"] == "Hi, I am planning a trip to Lisbon"
    assert turn["response"] == "reply #1 to: Hi, I am planning a trip to Lisbon"
    assert turn["intent"] == "chat" and turn["sources"] == []
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 1
    stored = _turn_items(dynamodb, sid)[0]
    assert stored["user_id"] == {"S": "alice"}
    assert stored["model"] == {"S": "fake-llm"}


def test_the_prompt_holds_only_the_last_window_turns(api: Api, model) -> None:
    sid = api.new_session()
    for i in range(1, 6):
        api.say(sid, f"fact number {i}")
    api.say(sid, "what do you remember?", window_turns=2)
    prompt = model.prompts[-1]
    assert "fact number 4" in prompt and "fact number 5" in prompt
    assert "fact number 3" not in prompt
    assert prompt.rstrip().endswith("User: what do you remember?\nAssistant:")
    api.say(sid, "and now?", window_turns=0)
    assert "fact number" not in model.prompts[-1]


def test_window_turns_above_the_configured_maximum_is_rejected(api: Api) -> None:
    sid = api.new_session()
    status, data = api.call(
        "POST", f"/sessions/{sid}/messages", {"content": "hi", "window_turns": 10_000}
    )
    assert status == 400 and "window_turns" in data["error"]["message"]


def test_retry_with_same_client_message_id_is_stored_once_without_a_second_model_call(
    api: Api, model, dynamodb
) -> None:
    sid = api.new_session()
    first = api.say(sid, "book a table", client_message_id="m-1")
    again = api.say(sid, "book a table", client_message_id="m-1")
    assert again == first
    assert model.calls == 1
    assert len(_turn_items(dynamodb, sid)) == 1
    assert api.say(sid, "another", client_message_id="m-2")["turn"] == 2


def test_concurrent_messages_on_one_session_are_all_stored_with_contiguous_turns(
    api: Api, dynamodb, model, monkeypatch: pytest.MonkeyPatch
) -> None:
    # moto applies one request non-atomically when threads interleave inside it; DynamoDB
    # does not. Serialize each request (not the turns) so the test exercises our races only.
    memory = DynamoShortTermMemory(SerializedClient(dynamodb), "sessions", "conversations")
    monkeypatch.setattr(wiring, "chat_deps", lambda: ChatDeps(memory=memory, generator=model))
    sid = api.new_session()
    errors: list[BaseException] = []

    def send(i: int) -> None:
        try:
            api.say(sid, f"parallel {i}", client_message_id=f"c-{i}")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    items = _turn_items(dynamodb, sid)
    assert sorted(int(i["turn"]["N"]) for i in items) == list(range(1, 13))
    assert sorted(i["input"]["S"] for i in items) == sorted(f"parallel {i}" for i in range(12))
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["num_turns"] == 12


def test_model_failure_answers_503_keeps_the_message_and_a_retry_completes_it_once(
    api: Api, model, dynamodb
) -> None:
    sid = api.new_session()
    model.fail_next = 1
    status, err = api.call(
        "POST",
        f"/sessions/{sid}/messages",
        {"content": "remember my cat Tom", "client_message_id": "x"},
    )
    assert status == 503 and err["error"]["code"] == "model_unavailable"
    items = _turn_items(dynamodb, sid)
    assert len(items) == 1 and items[0]["input"]["S"] == "remember my cat Tom"
    assert items[0]["pending"] == {"BOOL": True}
    turn = api.say(sid, "remember my cat Tom", client_message_id="x")
    assert turn["turn"] == 1 and turn["response"].startswith("reply #2")
    assert turn["pending"] is False
    assert api.say(sid, "remember my cat Tom", client_message_id="x") == turn
    assert model.calls == 2
    assert len(_turn_items(dynamodb, sid)) == 1


def test_a_message_left_pending_when_its_session_ended_is_not_answered_later(
    api: Api, model, dynamodb
) -> None:
    """Decided (issue 10): an answer is only added to an open session. Once the session ended,
    consolidation takes it into long-term memory with the message unanswered; an answer written
    later would never reach that memory. The retry says so (409) and nothing changes."""
    sid = api.new_session()
    model.fail_next = 1
    body = {"content": "what is my cat called?", "client_message_id": "x"}
    assert api.call("POST", f"/sessions/{sid}/messages", body)[0] == 503
    assert api.call("POST", f"/sessions/{sid}/end")[0] == 200
    before = _turn_items(dynamodb, sid)

    status, err = api.call("POST", f"/sessions/{sid}/messages", body)

    assert status == 409 and err["error"]["code"] == "session_ended"
    assert "ended before turn 1 was answered" in err["error"]["message"]
    assert _turn_items(dynamodb, sid) == before and model.calls == 1


def test_a_caller_id_with_the_owner_separator_is_refused(api: Api) -> None:
    """ "#" separates a caller's id from the generation of their memory in stored keys: an id
    containing it could name another caller's forgotten data."""
    status, err = api.call("GET", "/sessions", user="alice#1")
    assert status == 401 and err["error"]["code"] == "unauthorized"


def test_messages_are_listed_in_both_orders_with_pagination(api: Api) -> None:
    sid = api.new_session()
    for i in range(1, 6):
        api.say(sid, f"m{i}")
    status, page1 = api.call("GET", f"/sessions/{sid}/messages", query={"limit": "3"})
    assert status == 200 and [m["turn"] for m in page1["messages"]] == [1, 2, 3]
    _, page2 = api.call(
        "GET", f"/sessions/{sid}/messages", query={"limit": "3", "next_token": page1["next_token"]}
    )
    assert [m["turn"] for m in page2["messages"]] == [4, 5] and page2["next_token"] is None
    _, desc = api.call("GET", f"/sessions/{sid}/messages", query={"order": "desc", "limit": "2"})
    assert [m["turn"] for m in desc["messages"]] == [5, 4]


def test_past_and_verified_without_long_term_memory_say_so_without_calling_the_model(
    api: Api, model
) -> None:
    sid = api.new_session()
    past = api.say(sid, "/past where did I travel last year?")
    verified = api.say(sid, "/VERIFIED what is the refund policy")
    assert past["intent"] == "past" and verified["intent"] == "verified"
    assert past["response"] == NO_LONG_TERM_MEMORY
    assert past["sources"] == [] and model.calls == 0


# --- export / import --------------------------------------------------------------------------


def test_an_exported_session_imports_elsewhere_with_every_turn(api: Api) -> None:
    sid = api.new_session(name="Recipes")
    for text in ("I love basil", "and tomatoes", "/past what did I like?"):
        api.say(sid, text)
    status, exported = api.call("GET", f"/sessions/{sid}/export")
    assert status == 200 and exported["format"] == "chatmemory.session.v1"
    assert [m["input"] for m in exported["messages"]] == [
        "I love basil",
        "and tomatoes",
        "/past what did I like?",
    ]
    status, created = api.call("POST", "/sessions/import", exported, user="bob")
    assert status == 201
    new = created["session"]
    assert new["session_id"] != sid and new["name"] == "Recipes" and new["num_turns"] == 3
    _, copy = api.call("GET", f"/sessions/{new['session_id']}/export", user="bob")
    strip = lambda msgs: [(m["turn"], m["input"], m["response"], m["intent"]) for m in msgs]  # noqa: E731
    assert strip(copy["messages"]) == strip(exported["messages"])
    assert copy["session"]["started_at"] == exported["session"]["started_at"]
    assert api.say(new["session_id"], "continue", user="bob")["turn"] == 4


def test_import_rejects_bad_documents_and_stores_nothing(api: Api) -> None:
    bad = {"messages": [{"input": "ok"}, {"input": 42}]}
    status, data = api.call("POST", "/sessions/import", bad)
    assert status == 400 and data["error"]["code"] == "bad_request"
    status, _ = api.call(
        "POST", "/sessions/import", {"messages": [{"input": "x", "created_at": "yesterday"}]}
    )
    assert status == 400
    assert api.call("GET", "/sessions")[1]["sessions"] == []


# --- isolation and errors ---------------------------------------------------------------------


def test_another_users_session_answers_404_on_every_route(api: Api, dynamodb) -> None:
    sid = api.new_session(user="alice")
    api.say(sid, "secret plans", user="alice")
    for method, path, body in [
        ("GET", f"/sessions/{sid}", None),
        ("POST", f"/sessions/{sid}/end", None),
        ("POST", f"/sessions/{sid}/messages", {"content": "hi"}),
        ("GET", f"/sessions/{sid}/messages", None),
        ("GET", f"/sessions/{sid}/export", None),
        ("DELETE", f"/sessions/{sid}", None),
    ]:
        status, data = api.call(method, path, body, user="mallory")
        assert status == 404, (method, path)
        assert data["error"]["code"] == "session_not_found"
    assert api.call("GET", "/sessions", user="mallory")[1]["sessions"] == []
    assert api.call("GET", f"/sessions/{sid}")[1]["session"]["status"] == "OPEN"
    assert len(_turn_items(dynamodb, sid)) == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{not json", 400),
        ("[1, 2]", 400),
        ('{"content": 5}', 400),
        ("{}", 400),
        ('{"content": "hi", "unknown": 1}', 400),
        ('{"content": ""}', 400),
        (json.dumps({"content": "x" * (schema.MAX_INPUT_CHARS_DEFAULT + 1)}), 413),
    ],
)
def test_bad_message_bodies_get_a_json_error_and_store_nothing(
    api: Api, dynamodb, raw: str, expected: int
) -> None:
    sid = api.new_session()
    status, data = api.call("POST", f"/sessions/{sid}/messages", raw=raw)
    assert status == expected
    assert set(data["error"]) == {"code", "message"}
    assert _turn_items(dynamodb, sid) == []


def test_unknown_session_and_route_answer_404_json(api: Api) -> None:
    status, data = api.call("GET", "/sessions/does-not-exist")
    assert status == 404 and data["error"]["code"] == "session_not_found"
    status, data = api.call("GET", "/sessions/" + "a" * 5000)
    assert status == 400  # no id of ours (tests/unit/test_identifiers.py)
    status, data = api.call("GET", "/nowhere")
    assert status == 404 and data["error"]["code"] == "not_found"


def test_a_request_without_an_authenticated_caller_is_refused(api: Api, lambda_context) -> None:
    from handlers import chat_api

    event = {
        "resource": "/sessions",
        "path": "/sessions",
        "httpMethod": "GET",
        "headers": {},
        "requestContext": {"requestId": "r"},
        "body": None,
        "isBase64Encoded": False,
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "multiValueHeaders": {},
    }
    answer = chat_api.handler(event, lambda_context)
    assert answer["statusCode"] == 401


@pytest.mark.parametrize(
    ("allowed", "origin", "expected"),
    [
        ("*", "https://chat.example.com", "*"),
        (
            "https://chat.example.com,https://b.example",
            "https://chat.example.com",
            "https://chat.example.com",
        ),
        ("https://chat.example.com", "https://evil.example", None),
        ("", "https://chat.example.com", None),
    ],
)
def test_answers_carry_cors_headers_for_allowed_origins_only(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context, allowed, origin, expected
) -> None:
    # API Gateway answers preflights itself; a browser reads a proxy answer only if the Lambda
    # names its origin.
    from handlers import chat_api

    monkeypatch.setenv("CORS_ALLOW_ORIGINS", allowed)
    deps = ChatDeps(memory=wiring.short_term_memory(), generator=FakeGenerator())
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    event = {
        "resource": "/sessions",
        "path": "/sessions",
        "httpMethod": "GET",
        "headers": {"origin": origin},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "body": None,
        "isBase64Encoded": False,
        "requestContext": {"requestId": "r", "authorizer": {"claims": {"sub": "alice"}}},
    }
    answer = chat_api.handler(event, lambda_context)
    assert answer["statusCode"] == 200
    headers = answer.get("multiValueHeaders") or {}
    assert headers.get("Access-Control-Allow-Origin") == ([expected] if expected else None)
