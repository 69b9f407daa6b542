"""The chat message's own path (handlers/messages.py, no Powertools resolver, no pydantic)
takes exactly the messages the API's Powertools routes take, with the same values, and answers
an outcome exactly as they do: the same status, headers and body, byte for byte."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chatmemory import schema
from chatmemory.domain import Feedback, Sentiment, Source, Turn
from chatmemory.errors import (
    ChatMemoryError,
    ConfigurationError,
    ModelUnavailable,
    PayloadTooLarge,
    SessionEnded,
    SessionNotFound,
)
from chatmemory.services.conversation.chat import TurnResult
from handlers import chat_routes, messages
from local.gateway import load_routes, proxy_event

ROUTES = load_routes()
_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _event(
    body: str | None,
    *,
    session: str = "s-1",
    user: str = "alice",
    headers: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    return proxy_event(
        method="POST",
        target=f"/sessions/{quote(session, safe='')}/messages",
        headers=[("Content-Type", "application/json")] if headers is None else headers,
        body=body,
        user_id=user,
        routes=ROUTES,
    )


class _Recorded:
    """messages.post_message's stand-in: records what it was asked, answers OUTCOME."""

    def __init__(self, outcome: Any) -> None:
        self.outcome, self.calls = outcome, []

    def __call__(self, *args: Any) -> TurnResult:
        self.calls.append(args)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        result: TurnResult = self.outcome
        return result


def _both(
    event: dict[str, Any], outcome: Any, cors: tuple[str, ...], context: Any
) -> tuple[Any, Any, _Recorded, _Recorded]:
    """The message path's answer (None: not taken) and the Powertools routes' answer to EVENT,
    each with the calls its post_message received."""
    lean_calls, routed_calls = _Recorded(outcome), _Recorded(outcome)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(messages, "post_message", lean_calls)
        message = messages.accepted(copy.deepcopy(event))
        lean = None if message is None else messages.answer(message, cors)
        patch.setattr(messages, "post_message", routed_calls)
        routed = chat_routes.api(cors).resolve(copy.deepcopy(event), context)
    return lean, routed, lean_calls, routed_calls


def _turn(number: int = 1, **fields: Any) -> Turn:
    return Turn(
        session_id="s-1",
        turn=number,
        user_id="alice",
        input="hello",
        response="hi",
        created_at="2026-11-28T10:00:00Z",
        **fields,
    )


_text = st.text(max_size=40)
_optional_text = st.none() | _text
_score = st.floats(min_value=-1, max_value=1, allow_nan=False)
_metadata_value = (
    st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
    | st.text(max_size=30)
)
_turns = st.builds(
    Turn,
    session_id=st.just("s-1"),
    turn=st.integers(min_value=1, max_value=10_000),
    user_id=st.just("alice"),
    input=_text,
    response=_optional_text,
    intent=st.sampled_from(schema.Intent),
    sources=st.lists(
        st.builds(
            Source,
            kind=st.sampled_from(schema.SourceKind) | _text,
            id=_text,
            title=_text,
            date=_optional_text,
            score=st.none() | st.floats(allow_nan=False, allow_infinity=False),
            doc_id=_optional_text,
            passage_id=_optional_text,
        ),
        max_size=3,
    ),
    created_at=_text,
    client_message_id=_optional_text,
    pending=st.booleans(),
    degraded=st.booleans(),
    origin=st.sampled_from(schema.TurnOrigin),
    metadata=st.dictionaries(st.text(min_size=1, max_size=10), _metadata_value, max_size=4),
    feedback=st.none()
    | st.builds(Feedback, rating=st.sampled_from(schema.Rating), at=_text, comment=_optional_text),
    sentiment=st.none()
    | st.builds(Sentiment, label=st.sampled_from(schema.SentimentLabel), score=_score),
    agent_id=_optional_text,
    answered_by=st.none() | st.integers(min_value=1, max_value=10_000),
    for_agent=st.booleans(),
    messages=st.none()
    | st.lists(st.dictionaries(st.sampled_from(["role", "content"]), _text), max_size=3).map(
        json.dumps
    ),
)
_errors = st.sampled_from(
    [
        SessionNotFound("no such session"),
        SessionEnded("session s-1 is ended; start a new one"),
        PayloadTooLarge("the message is 40001 characters; at most 32000"),
        ModelUnavailable("the model is throttled"),
        ConfigurationError("invalid settings: TEXT_BACKEND='gpt-4'"),
        RuntimeError("a bug"),
    ]
)
_CORS = st.sampled_from([(), ("*",), ("https://a.example",), ("https://a.example", "https://b")])
_ORIGIN = st.sampled_from([None, "https://a.example", "https://b", "https://elsewhere"])


@_SETTINGS
@given(
    turn=_turns,
    answer=st.none() | _turns,
    error=st.none() | _errors,
    cors=_CORS,
    origin=_ORIGIN,
)
def test_an_outcome_is_answered_as_the_routes_answer_it(
    lambda_context: Any,
    turn: Turn,
    answer: Turn | None,
    error: ChatMemoryError | None,
    cors: tuple[str, ...],
    origin: str | None,
) -> None:
    headers = [("Content-Type", "application/json")] + ([("Origin", origin)] if origin else [])
    event = _event(json.dumps({"content": "hello"}), headers=headers)
    outcome = error if error is not None else TurnResult(turn=turn, answer=answer)
    lean, routed, _, _ = _both(event, outcome, cors, lambda_context)
    assert lean == routed


_IDS = st.sampled_from(["s-1", "user42:conv_7", "a.b", ".", "..", "x y", "é", "a/b", "x" * 129])
_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=8)
    | _IDS
    | st.lists(st.integers(), max_size=2)
)
_VALID = st.fixed_dictionaries(
    {"content": st.text(max_size=20)},
    optional={
        "client_message_id": st.none() | st.sampled_from(["m-1", "user42:conv_7", "a.b"]),
        "window_turns": st.none() | st.integers(min_value=0, max_value=60),
    },
)


@st.composite
def _near_valid(draw: st.DrawFn) -> dict[str, Any]:
    """A valid body with one field changed to anything, removed, or one field too many."""
    body: dict[str, Any] = draw(_VALID)
    field = draw(st.sampled_from(["content", "client_message_id", "window_turns", "extra"]))
    if draw(st.booleans()) and field in body:
        del body[field]
    else:
        body[field] = draw(_VALUES)
    return body


_BODIES = (
    _VALID.map(json.dumps)
    | _near_valid().map(json.dumps)
    | st.sampled_from(
        ["", "null", "[]", '"hi"', "{", '{"content": NaN}', '{"content": "a", "content": 1}']
    )
    | st.just(None)
)
_CONTENT_TYPES = st.sampled_from(
    [
        [("Content-Type", "application/json")],
        [("Content-Type", "application/json")],
        [("content-type", "Application/JSON; charset=utf-8")],
        [("Content-Type", "text/plain")],
        [],
    ]
)


_OK = [("Content-Type", "application/json")]


@_SETTINGS
@example(body='{"content": "a", "window_turns": -1}', session="s-1", user="alice", headers=_OK)
@example(body='{"content": "a", "window_turns": true}', session="s-1", user="alice", headers=_OK)
@example(body='{"content": "a", "window_turns": 2.0}', session="s-1", user="alice", headers=_OK)
@example(
    body='{"content": "a", "client_message_id": "."}', session="s-1", user="alice", headers=_OK
)
@example(body='{"content": "a", "client_message_id": ""}', session="s-1", user="alice", headers=_OK)
@example(body='{"content": 1}', session="s-1", user="alice", headers=_OK)
@example(body='{"content": "a", "extra": 1}', session="s-1", user="alice", headers=_OK)
@example(body='{"content": "a"}', session="..", user="alice", headers=_OK)
@example(body='{"content": "a"}', session="s-1", user="bad#user", headers=_OK)
@given(
    body=_BODIES,
    session=st.just("s-1") | _IDS,
    user=st.sampled_from(["alice", "alice", "", "bad#user"]),
    headers=_CONTENT_TYPES,
)
def test_a_message_is_taken_when_and_as_the_routes_take_it(
    lambda_context: Any, body: str | None, session: str, user: str, headers: Any
) -> None:
    """Whatever the request, the message path posts the message with the same values as the
    routes, or leaves the request to them (which then answer it with the API's error)."""
    event = _event(body, session=session, user=user, headers=headers)
    result = TurnResult(turn=_turn())
    lean, routed, lean_calls, routed_calls = _both(event, result, (), lambda_context)
    assert lean_calls.calls == routed_calls.calls
    assert (lean is not None) == bool(routed_calls.calls)
    if lean is not None:
        assert lean == routed


def test_a_valid_message_takes_the_message_path(lambda_context: Any) -> None:
    """Else the check above would hold of a path that takes nothing."""
    body = {"content": "hi", "client_message_id": "m-1", "window_turns": 3}
    lean, routed, lean_calls, _ = _both(
        _event(json.dumps(body)), TurnResult(turn=_turn()), (), lambda_context
    )
    assert lean is not None and lean == routed
    assert lean_calls.calls == [("alice", "s-1", "hi", "m-1", 3)]
