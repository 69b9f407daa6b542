"""The OpenAI-compatible routes as API Gateway calls the functions: the chat function's buffered
route (Powertools) and the stream function's entry (handlers/stream.answer). The caller is the
authenticated principal; `user` names an end user only for a role allowed to; a retried request
calls the model once; a request's options reach the model or are refused; errors are OpenAI's,
and the API's own routes keep theirs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.errors import BadRequest
from chatmemory.ports import GenerationOptions, Piece
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.services.conversation.completions import Exchange, conversation_of
from local.gateway import load_routes, proxy_event
from tests.fakes import FakeGenerator

BACKEND = "arn:aws:iam::123456789012:role/apps/Backend"
SESSION = "arn:aws:sts::123456789012:assumed-role/Backend/i-0abc"
OTHER = "arn:aws:sts::123456789012:assumed-role/Reporting/i-0def"
CHAT = "/v1/chat/completions"


@dataclass
class RecordingGenerator(FakeGenerator):
    """The fake model, keeping the options each call was asked with."""

    options: list[GenerationOptions] = field(default_factory=list)

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        self.options.append(options)
        return super().pieces(prompt, options, stream=stream)


class Functions:
    """The chat function (buffered) and the stream function's entry, as API Gateway calls them."""

    def __init__(self, lambda_context: Any) -> None:
        from handlers import chat_api

        self._handler, self._context, self._routes = chat_api.handler, lambda_context, load_routes()

    def event(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str = "alice",
        arn: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        event = proxy_event(
            method=method,
            target=path,
            headers=[("Content-Type", "application/json"), *(headers or {}).items()],
            body=None if body is None else json.dumps(body),
            user_id=user,
            routes=self._routes,
        )
        if arn is not None:  # IAM authorization: the caller is the role session
            event["requestContext"]["authorizer"] = None
            event["requestContext"]["identity"]["userArn"] = arn
        return event

    def buffered(self, *args: Any, **kwargs: Any) -> tuple[int, str, dict[str, Any]]:
        answer = self._handler(self.event(*args, **kwargs), self._context)
        headers = {k: v[0] for k, v in (answer.get("multiValueHeaders") or {}).items()}
        headers.update(answer.get("headers") or {})
        return answer["statusCode"], answer.get("body") or "", headers

    def streamed(self, *args: Any, **kwargs: Any) -> tuple[int, str, dict[str, str]]:
        from handlers import stream

        answer = stream.answer(self.event(*args, **kwargs), ())
        return answer.status, b"".join(answer.body).decode(), dict(answer.headers)


@pytest.fixture
def model(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> RecordingGenerator:
    monkeypatch.setenv(schema.ENV_END_USER_ROLE_ARNS, BACKEND)
    wiring.clear_caches()
    generator = RecordingGenerator()
    deps = ChatDeps(memory=wiring.short_term_memory(), generator=generator)
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return generator


@pytest.fixture
def api(model: RecordingGenerator, lambda_context: Any) -> Functions:
    return Functions(lambda_context)


def _ask(*contents: str, **fields: Any) -> dict[str, Any]:
    """A request whose history alternates user and assistant lines, the last the user's."""
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]
    return {"model": "any", "messages": messages, **fields}


def test_user_names_an_end_user_of_an_allowed_role_each_with_their_own_sessions(
    api: Functions,
) -> None:
    for end_user in ("u-1", "u-2"):
        status, body, headers = api.streamed("POST", CHAT, _ask("hi", user=end_user), arn=SESSION)
        assert status == 200, body
        stored = wiring.chat_deps().memory.get_alias(
            f"{BACKEND}/end-user/{end_user}", headers["X-Session-Id"]
        )
        assert stored is not None
    # The backend's own identity holds none of it.
    status, body, _ = api.buffered("GET", "/sessions", arn=SESSION)
    assert json.loads(body)["sessions"] == []


@pytest.mark.parametrize(
    "caller", [{"arn": OTHER}, {"user": "alice"}], ids=["another-role", "cognito-user"]
)
def test_user_is_refused_from_a_caller_who_may_not_name_end_users(
    api: Functions, model: RecordingGenerator, caller: dict[str, Any]
) -> None:
    for call in (api.streamed, api.buffered):
        status, body, _ = call("POST", CHAT, _ask("hi", user="u-1"), **caller)
        assert status == 403, body
        assert json.loads(body)["error"]["type"] == "permission_error"
    assert model.calls == 0


def test_a_retried_request_is_answered_from_its_stored_turn(
    api: Functions, model: RecordingGenerator
) -> None:
    first = json.loads(api.streamed("POST", CHAT, _ask("hello"))[1])
    reply = first["choices"][0]["message"]["content"]
    again = json.loads(api.streamed("POST", CHAT, _ask("hello"))[1])
    assert again["choices"][0]["message"]["content"] == reply and model.calls == 1
    follow = _ask("hello", reply, "and then?")
    answers = {json.loads(api.streamed("POST", CHAT, follow)[1])["id"] for _ in range(2)}
    assert len(answers) == 2 and model.calls == 2
    session = first["chatmemory"]["session_id"]
    turns = json.loads(api.buffered("GET", f"/sessions/{session}/messages")[1])["messages"]
    assert [t["input"] for t in turns] == ["hello", "and then?"]


def test_the_buffered_route_answers_the_same_and_a_stream_in_one_body(api: Functions) -> None:
    status, body, headers = api.buffered("POST", CHAT, _ask("one"))
    assert status == 200 and headers["Content-Type"] == "application/json"
    answer = json.loads(body)
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"] == "reply #1 to: one"
    status, body, headers = api.buffered("POST", CHAT, _ask("two", stream=True))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [line[len("data: ") :] for line in body.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == (
        "reply #2 to: two"
    )


def test_options_reach_the_model_within_the_deployments_bound(
    api: Functions, model: RecordingGenerator
) -> None:
    asked = _ask("hi", max_tokens=7, temperature=0.3, stop="STOP")
    assert api.streamed("POST", CHAT, asked)[0] == 200
    options = model.options[-1]
    assert (options.max_new_tokens, options.temperature) == (7, 0.3)
    assert "STOP" in options.stop
    assert api.streamed("POST", CHAT, _ask("more", max_tokens=10**6))[0] == 200
    assert model.options[-1].max_new_tokens == wiring.chat_policy().max_new_tokens


def test_the_clients_system_message_replaces_the_deployments(
    api: Functions, model: RecordingGenerator
) -> None:
    request = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": "Answer like a pirate."},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        ],
    }
    assert api.streamed("POST", CHAT, request)[0] == 200
    assert "Answer like a pirate." in model.prompts[-1]
    assert wiring.chat_policy().system_prompt not in model.prompts[-1]


@pytest.mark.parametrize("call", ["buffered", "streamed"])
def test_errors_are_openais_on_v1_and_the_apis_own_elsewhere(api: Functions, call: str) -> None:
    status, body, _ = getattr(api, call)("POST", CHAT, {"model": "m", "messages": "hi"})
    assert status == 400
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "messages"
    assert set(error) == {"message", "type", "param", "code"}
    status, body, _ = api.buffered("POST", "/sessions", {"name": 5})
    assert status == 400 and set(json.loads(body)["error"]) == {"code", "message"}


def test_a_bad_session_header_and_an_unknown_model_are_refused(api: Functions) -> None:
    status, body, _ = api.streamed("POST", CHAT, _ask("x"), headers={"X-Session-Id": "a/b"})
    assert status == 400 and json.loads(body)["error"]["code"] == "invalid_session_id"
    status, body, _ = api.buffered("GET", "/v1/models/gpt-4o")
    assert status == 404 and json.loads(body)["error"]["code"] == "model_not_found"


def test_a_model_failing_mid_stream_ends_it_with_an_error_and_keeps_the_message(
    api: Functions, model: RecordingGenerator
) -> None:
    model.fail_next = 1
    status, body, _ = api.streamed("POST", CHAT, _ask("hello", stream=True))
    assert status == 200  # admitted: the failure comes after the first byte could have
    last = body.strip().split("\n\n")[-1]
    assert json.loads(last[len("data: ") :])["error"]["type"] == "api_error"
    assert "[DONE]" not in body
    # The SDK's retry answers it, once.
    status, body, _ = api.streamed("POST", CHAT, _ask("hello"))
    answer = json.loads(body)
    assert answer["choices"][0]["message"]["content"].endswith("to: hello")
    session = answer["chatmemory"]["session_id"]
    turns = json.loads(api.buffered("GET", f"/sessions/{session}/messages")[1])["messages"]
    assert [(t["input"], t["pending"]) for t in turns] == [("hello", False)]


def test_a_conversation_is_read_as_openai_clients_send_it() -> None:
    conversation = conversation_of(
        [
            ("assistant", "How can I help?"),  # a greeting before the user spoke
            ("system", "Be brief."),
            ("user", "a"),
            ("user", "b"),
            ("assistant", "c"),
            ("developer", "Be kind."),
            ("user", "d"),
        ]
    )
    assert conversation.system == "Be brief.\n\nBe kind."
    assert conversation.exchanges == (Exchange("a\n\nb", "c"),)
    assert conversation.message == "d"
    for messages in ([("user", "a"), ("assistant", "b")], [("system", "s")], []):
        with pytest.raises(BadRequest):
            conversation_of(messages)


def test_a_reader_gone_mid_stream_stops_the_answer_and_stores_what_it_was_sent(
    api: Functions, model: RecordingGenerator
) -> None:
    """Failed before: a message stacked before its answer (the default) is completed by an
    update that left `stopped` out, so the stopped answer was stored as a whole one."""
    from handlers import stream

    model.reply = lambda prompt: "one two three four five six seven eight"
    answer = stream.answer(api.event("POST", CHAT, _ask("count", stream=True)), ())
    # Two words are handed over, then the client goes away.
    chunks = [next(answer.body), next(answer.body)]
    answer.body.close()  # type: ignore[attr-defined]
    shown = "".join(
        json.loads(c.decode()[len("data: ") :])["choices"][0]["delta"]["content"] for c in chunks
    )
    session = dict(answer.headers)["X-Session-Id"]
    [turn] = json.loads(api.buffered("GET", f"/sessions/{session}/messages")[1])["messages"]
    assert turn["stopped"] is True and turn["response"] == shown, (turn, shown)
