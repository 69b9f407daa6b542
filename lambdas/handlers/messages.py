"""The chat message route, POST /sessions/{session_id}/messages: the one module that answers a
chat message, for every way a request reaches it.

A request that is a message the API's models take as it is (`PostMessageRequest` of
chatmemory/api_models/turns.py, the identifier rule of schema, a JSON body: `accepted`) is answered
here without Powertools' resolver or pydantic, so that a cold start whose first request is a
message (the route a conversation calls most) imports neither (docs/measured/coldstart.md). Any
other request goes to the Powertools routes, which validate it (their errors are the API's) and
then answer it with this module too (`reply`). The answer's JSON (`envelope_json`, the route's
`MessageEnvelope`), its errors (`error_reply`) and its CORS headers (handlers/cors.py) are made
here once (tests/unit/test_message_route.py holds the two ways to the same answers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import Enum
from functools import partial
from typing import Any, NamedTuple

from chatmemory import wiring
from chatmemory.domain import Feedback, Sentiment, Source, Turn
from chatmemory.errors import ChatMemoryError
from chatmemory.schema import ID_MAX_LENGTH, ID_PATTERN
from chatmemory.services.conversation import chat
from handlers import chat_shared
from handlers.cors import cors_headers
from handlers.identity import caller_id
from handlers.json_body import error_json, strict_json

_PATH = re.compile(r"/sessions/([^/]+)/messages")
_ID = re.compile(ID_PATTERN)
_FIELDS = frozenset({"content", "client_message_id", "window_turns"})


class Message(NamedTuple):
    """A chat message as the route reads it, and the request's Origin header (for CORS)."""

    user: str
    session_id: str
    content: str
    client_message_id: str | None
    window_turns: int | None
    origin: str | None


def accepted(event: dict[str, Any]) -> Message | None:
    """The chat message EVENT carries, when it is one the API's models accept as it is."""
    path = event.get("path")
    if event.get("httpMethod") != "POST" or not isinstance(path, str):
        return None
    matched = _PATH.fullmatch(path)
    if matched is None or not _identifier(matched.group(1)):
        return None
    body = event.get("body")
    if not isinstance(body, str) or event.get("isBase64Encoded") or not _json_media(event):
        return None
    try:
        fields = strict_json(body)
        user = caller_id(event)
    # A JSONDecodeError is a ValueError; an identity refused (Unauthorized, or an end user a
    # caller may not name) is answered by the routes.
    except (ValueError, ChatMemoryError):
        return None
    if not isinstance(fields, dict) or not _FIELDS.issuperset(fields):
        return None
    content = fields.get("content")
    message_id = fields.get("client_message_id")
    window = fields.get("window_turns")
    if not isinstance(content, str):
        return None
    if message_id is not None and not _identifier(message_id):
        return None
    if window is not None and (type(window) is not int or window < 0):
        return None
    return Message(
        user=user,
        session_id=matched.group(1),
        content=content,
        client_message_id=message_id,
        window_turns=window,
        origin=_header(event, "origin"),
    )


def answer(message: Message, cors_origins: tuple[str, ...]) -> dict[str, Any]:
    """The message answered, as the proxy answer API Gateway passes on (this function's own
    path: no resolver)."""
    return _proxy(*reply(message), message, cors_origins)


def reply(message: Message) -> tuple[int, str]:
    """The status and JSON body of a chat message answered and stored
    (post_message): the route's envelope, or the API's error envelope.
    Both ways of reaching the route answer with this."""
    try:
        result = post_message(
            message.user,
            message.session_id,
            message.content,
            message.client_message_id,
            message.window_turns,
        )
    except ChatMemoryError as error:
        return error_reply(error)
    except Exception:
        status, code, text = chat_shared.unexpected_error()
        return status, error_json(code, text)
    return 200, envelope_json(result.turn, result.answer)


def post_message(
    user: str,
    session_id: str,
    content: str,
    client_message_id: str | None,
    window_turns: int | None,
) -> chat.TurnResult:
    """A message answered and stored, on the session the caller's id names (both ways of
    reaching the route)."""
    deps = wiring.chat_deps()
    message = chat.Message(user, session_id, content, client_message_id, window_turns)
    answer = partial(chat.post_message, deps, wiring.chat_policy())
    result = chat.on_current_session(deps, message, answer)
    chat_shared.settled(result)
    return result


def error_reply(error: ChatMemoryError) -> tuple[int, str]:
    """The status and JSON error envelope a request that failed with ERROR is answered with."""
    status, code, text = chat_shared.known_error(error)
    return status, error_json(code, text)


def envelope_json(turn: Turn, answer: Turn | None) -> str:
    """The route's MessageEnvelope: the message's turn, and the later turn that holds its
    answer when it was answered together with later messages."""
    envelope = {"turn": turn_json(turn), "answer": None if answer is None else turn_json(answer)}
    return json.dumps(envelope, separators=(",", ":"))


def turn_json(turn: Turn) -> dict[str, Any]:
    """A turn as the API's `TurnOut` writes it (every field, in its order)."""
    return {
        "turn": turn.turn,
        "input": turn.input,
        "response": turn.response,
        "intent": _value(turn.intent),
        "sources": [source_json(source) for source in turn.sources],
        "created_at": turn.created_at,
        "client_message_id": turn.client_message_id,
        "pending": turn.pending,
        "degraded": turn.degraded,
        "origin": _value(turn.origin),
        "agent_id": turn.agent_id,
        "for_agent": turn.for_agent,
        "metadata": {key: _metadata_value(value) for key, value in turn.metadata.items()},
        "messages": json.loads(turn.messages) if turn.messages is not None else None,
        "feedback": _feedback_json(turn.feedback),
        "sentiment": _sentiment_json(turn.sentiment),
        "answered_by": turn.answered_by,
        "stopped": turn.stopped,
    }


def source_json(source: Source) -> dict[str, Any]:
    """A source as the API's `SourceOut` writes it."""
    return {
        "kind": _value(source.kind),
        "id": source.id,
        "title": source.title,
        "date": source.date,
        "score": None if source.score is None else float(source.score),
        "doc_id": source.doc_id,
        "passage_id": source.passage_id,
    }


def _feedback_json(feedback: Feedback | None) -> dict[str, Any] | None:
    if feedback is None:
        return None
    return {"rating": _value(feedback.rating), "comment": feedback.comment, "at": feedback.at}


def _sentiment_json(sentiment: Sentiment | None) -> dict[str, Any] | None:
    if sentiment is None:
        return None
    return {"label": _value(sentiment.label), "score": float(sentiment.score)}


def _metadata_value(value: Any) -> Any:
    # The API's Score: a number is kept to 6 decimal places (api_models.MetadataValue).
    return round(value, 6) if isinstance(value, float) else value


def _value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _identifier(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= ID_MAX_LENGTH and bool(_ID.fullmatch(value))


def _headers(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The request's headers as Powertools reads them for a REST API (its multi-value ones
    when the event has any)."""
    return event.get("multiValueHeaders") or event.get("headers") or {}


def _header(event: Mapping[str, Any], name: str) -> str | None:
    """A header's first value, its name in any case."""
    for key, value in _headers(event).items():
        if key.lower() == name:
            value = value[0] if isinstance(value, list) and value else value
            return value if isinstance(value, str) else None
    return None


def _json_media(event: Mapping[str, Any]) -> bool:
    """Whether every Content-Type the request names, in both header maps, is JSON's (none
    named: JSON, as the routes take it)."""
    for key in ("headers", "multiValueHeaders"):
        for name, value in (event.get(key) or {}).items():
            if name.lower() != "content-type":
                continue
            for one in value if isinstance(value, list) else [value]:
                media = one.split(";")[0].strip().lower() if isinstance(one, str) else None
                if media != "application/json":
                    return False
    return True


def _proxy(
    status: int, body: str, message: Message, cors_origins: tuple[str, ...]
) -> dict[str, Any]:
    """The proxy answer as Powertools' resolver writes it (multi-value headers, CORS as
    handlers/http.py's OriginCORSConfig gives it)."""
    headers: dict[str, list[str]] = {"Content-Type": ["application/json"]}
    headers.update({name: [value] for name, value in cors_headers(message.origin, cors_origins)})
    return {
        "statusCode": status,
        "body": body,
        "isBase64Encoded": False,
        "multiValueHeaders": headers,
    }
