"""POST /sessions/{session_id}/messages/stream: a chat message answered as server-sent events, as
the model writes it, on the same turn pipeline the buffered route collects
(services/conversation/turn/pipeline.py): the stored turn is the same either way.

Before the first byte, the request is authorized, validated and its session checked (the turn's
admission): a bad request gets the buffered route's JSON error and status code, never a 200
stream that fails. Then `200 text/event-stream`:

    event: memory   data: {"sources": [...]}       what long-term memory put in the prompt
    event: delta    data: {"text": "..."}          the answer's text, after the output filters
    event: turn     data: {"turn": {...}, "answer": ...}   the stored turn: the buffered answer
    event: error    data: {"status": 503, "error": {"code": ..., "message": ...}}
    : ping                                          every 15 s while the model is quiet

`turn` or `error` is last. A retry with the same client_message_id replays the stored answer (its
text as one delta, then its turn) without calling the model. A reader that goes away before the
end (the page's Stop, Ctrl-C, a dropped connection) stops the model: what it was sent is stored
as the answer, marked `stopped`, and the next turn's prompt says so.

The same function answers the local gateway (a proxy event) and the deployed function behind the
Lambda Web Adapter (handlers/stream_server.py, which makes an event of its request).
"""

from __future__ import annotations

import contextvars
import json
import queue
import threading
from collections.abc import Iterator
from functools import partial
from typing import Any, NamedTuple, Protocol

from chatmemory import deadline, wiring
from chatmemory.errors import ChatMemoryError
from chatmemory.schema import OPENAI_CHAT_PATH
from chatmemory.services.conversation import chat
from handlers import chat_shared, messages
from handlers.cors import cors_headers
from handlers.json_body import error_json

SUFFIX = "/stream"
PING_SECONDS = 15.0
EVENT_STREAM = "text/event-stream"


class Answer(NamedTuple):
    """An HTTP answer whose body comes in chunks (a JSON error is one chunk)."""

    status: int
    headers: list[tuple[str, str]]
    body: Iterator[bytes]


def answer(event: dict[str, Any], cors_origins: tuple[str, ...]) -> Answer:
    """The streamed answer to a proxy EVENT of the stream route (or of the OpenAI-compatible
    chat route, which this function answers too: handlers/routes/openai.py)."""
    if event.get("path") == OPENAI_CHAT_PATH:
        from handlers.routes import openai as openai_routes

        return openai_routes.answer(event, cors_origins)
    message = messages.accepted(_as_message(event))
    if message is None:
        return _routes(event, cors_origins)
    headers = cors_headers(message.origin, cors_origins)
    stop = chat.StopSignal()
    try:
        events = _open(message, stop)
    except ChatMemoryError as error:
        status, body = messages.error_reply(error)
        return _json(status, body, headers)
    except Exception:
        status, code, text = chat_shared.unexpected_error()
        return _json(status, error_json(code, text), headers)
    sse = [("Content-Type", EVENT_STREAM), ("Cache-Control", "no-cache"), *headers]
    return Answer(200, sse, server_sent(events, stop))


def collected_events(message: messages.Message) -> str:
    """The message's events in one piece (its admission's errors are raised)."""
    stop = chat.StopSignal()
    return b"".join(server_sent(_open(message, stop), stop)).decode()


def _open(message: messages.Message, stop: chat.StopSignal) -> Iterator[chat.TurnEvent]:
    """The turn's events, admitted now (on the session the caller's id names: a client id whose
    session ended is continued, as the buffered route does)."""
    turn = chat.Message(
        message.user,
        message.session_id,
        message.content,
        message.client_message_id,
        message.window_turns,
        stream=True,
        stop=stop,
    )
    deps = wiring.chat_deps()
    return chat.on_current_session(deps, turn, partial(chat.open_turn, deps, wiring.chat_policy()))


class Form(Protocol):
    """How a turn's events are written as server-sent events: this API's own (NATIVE), or
    OpenAI's chat.completion.chunk events (handlers/routes/openai.py)."""

    def delta(self, text: str) -> bytes: ...

    def memory(self, memory: chat.Memory) -> bytes: ...

    def stored(self, result: chat.TurnResult, *, replay: bool) -> Iterator[bytes]: ...

    def error(self, error: BaseException) -> bytes: ...


class _Native:
    """event: memory / delta / turn / error (this module's docstring)."""

    def delta(self, text: str) -> bytes:
        return _event("delta", {"text": text})

    def memory(self, memory: chat.Memory) -> bytes:
        return _event("memory", {"sources": _sources(memory)})

    def stored(self, result: chat.TurnResult, *, replay: bool) -> Iterator[bytes]:
        return _stored(result, replay=replay)

    def error(self, error: BaseException) -> bytes:
        return _error(error)


NATIVE: Form = _Native()


def server_sent(
    events: Iterator[chat.TurnEvent],
    stop: chat.StopSignal,
    *,
    ping_seconds: float = PING_SECONDS,
    form: Form = NATIVE,
) -> Iterator[bytes]:
    """The turn's events as server-sent events (written by `form`). The turn runs in a thread
    of its own, so that a quiet model gets pings; a reader that stops reading (this generator
    closed) stops the model, and this waits for the turn to be stored before it returns (a
    Lambda that returned would be frozen with it half stored)."""
    found: queue.Queue[Any] = queue.Queue(maxsize=1)
    done = threading.Event()
    # The request's deadline (a context variable) goes along: it is the turn's.
    runner = threading.Thread(
        target=contextvars.copy_context().run,
        args=(_run, events, found, done),
        name="turn",
        daemon=True,
    )
    runner.start()
    shown: list[str] = []
    finished = False
    try:
        while True:
            try:
                item = found.get(timeout=ping_seconds)
            except queue.Empty:
                yield b": ping\n\n"
                continue
            if isinstance(item, chat.Delta):
                # Counted as shown once handed over: a reader that stops after it had it.
                shown.append(item.text)
                yield form.delta(item.text)
            elif isinstance(item, chat.MemoryUsed):
                written = form.memory(item.memory)
                if written:
                    yield written
            elif isinstance(item, chat.Stored):
                finished = True
                yield from form.stored(item.result, replay=not shown)
                return
            else:
                finished = True
                yield form.error(item)
                return
    finally:
        if not finished:
            stop.stop("".join(shown))
            _drain(found, done)
        runner.join()


def _run(events: Iterator[chat.TurnEvent], found: queue.Queue[Any], done: threading.Event) -> None:
    """The turn's events into `found`, then its failure if it failed."""
    try:
        for event in events:
            found.put(event)
    except BaseException as error:  # noqa: BLE001 - handed to the reader as an error event
        found.put(error)
    finally:
        done.set()


def _drain(found: queue.Queue[Any], done: threading.Event) -> None:
    """Keep taking the turn's events (nobody reads them any more) until it is stored."""
    while not (done.is_set() and found.empty()):
        try:
            found.get(timeout=0.1)
        except queue.Empty:
            continue


def _stored(result: chat.TurnResult, *, replay: bool) -> Iterator[bytes]:
    chat_shared.settled(result)
    answered = result.answer or result.turn
    if replay and answered.response:
        # A retry of a message answered before: its answer, as if written now.
        yield _event("delta", {"text": answered.response})
    yield _event("turn", json.loads(messages.envelope_json(result.turn, result.answer)))


def _error(error: BaseException) -> bytes:
    if isinstance(error, ChatMemoryError):
        status, code, text = chat_shared.known_error(error)
    else:
        status, code, text = chat_shared.unexpected_error()
    return _event("error", {"status": status, "error": {"code": code, "message": text}})


def _sources(memory: chat.Memory) -> list[dict[str, Any]]:
    recalled = memory.recalled.sources if memory.recalled else []
    profile = memory.profile.sources if memory.profile else []
    return [messages.source_json(source) for source in [*recalled, *profile]]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _json(status: int, body: str, headers: list[tuple[str, str]]) -> Answer:
    return Answer(status, [("Content-Type", "application/json"), *headers], iter([body.encode()]))


def _as_message(event: dict[str, Any]) -> dict[str, Any]:
    """The event as the buffered route's (the path without /stream): what `accepted` reads."""
    path = str(event.get("path", ""))
    return {**event, "path": path[: -len(SUFFIX)] if path.endswith(SUFFIX) else path}


def _routes(event: dict[str, Any], cors_origins: tuple[str, ...]) -> Answer:
    """A request the message path does not take as it is: the Powertools routes validate it
    (their errors are the API's) and answer it, its events in one piece."""
    from handlers import chat_api  # imported on first use, as the function's own routes are

    reply = chat_api.routes().api(cors_origins).resolve(event, None)
    headers: list[tuple[str, str]] = []
    for name, values in (reply.get("multiValueHeaders") or {}).items():
        headers += [(name, value) for value in values]
    for name, value in (reply.get("headers") or {}).items():
        headers.append((name, value))
    return Answer(reply["statusCode"], headers, iter([str(reply.get("body") or "").encode()]))


def request_deadline(remaining_ms: int | None) -> deadline.Deadline:
    """A streamed request's deadline: its function's own timeout (API Gateway's 29 s limit
    does not bind a streamed answer)."""
    import time

    return deadline.of_request(
        remaining_ms=remaining_ms, received_epoch_ms=None, now_epoch_ms=time.time() * 1000
    )
