"""A streamed answer (POST /sessions/{id}/messages/stream) as typed events: `MemoryEvent` (what
long-term memory put in the prompt), `DeltaEvent` (the answer's text as the model writes it),
then `TurnEvent` (the stored turn, as send_message returns it) or `ErrorEvent` (the failure,
typed as send_message raises it), which ends the stream.

`MessageStream` is the iterator `ChatMemoryClient.stream_message` returns. Closing it (`close()`,
leaving its `with` block, `break` inside one, an exception or Ctrl-C while reading) closes the
HTTP connection: the server stops the model and stores what it had sent, marked `stopped`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import requests

from chatmemory_client.errors import ChatMemoryError, ConnectionFailed, error_class
from chatmemory_client.models import Source, Turn
from chatmemory_client.sse import ServerSentEvent, events


@dataclass(frozen=True)
class MemoryEvent:
    """What long-term memory put in the prompt of this turn (recalled sessions and records,
    the profile's records): the same sources the stored turn lists."""

    sources: tuple[Source, ...] = ()


@dataclass(frozen=True)
class DeltaEvent:
    """The next piece of the answer's text (after the server's output filters)."""

    text: str


@dataclass(frozen=True)
class TurnEvent:
    """The stored turn: what send_message returns for the same message (its `answer` set when
    a later message's turn answered it). Last event of a stream that succeeded."""

    turn: Turn


@dataclass(frozen=True)
class ErrorEvent:
    """The turn failed after the stream started (the model failed halfway, say): `error` is the
    exception send_message would have raised (`raise event.error` to raise it). Last event."""

    error: ChatMemoryError


StreamEvent = MemoryEvent | DeltaEvent | TurnEvent | ErrorEvent


def turn_of(envelope: Mapping[str, Any]) -> Turn:
    """The turn of the API's message envelope (`{"turn": ..., "answer": ...}`), with `answer`
    set from it when another turn answered this message."""
    turn = Turn.from_json(envelope["turn"])
    answer = envelope.get("answer")
    if isinstance(answer, Mapping):
        turn = replace(turn, answer=Turn.from_json(answer))
    return turn


def typed(event: ServerSentEvent) -> StreamEvent | None:
    """The typed event of a server-sent event; None for an event this client does not know
    (a newer server's: skipped, as the models skip fields they do not know)."""
    if event.event not in ("memory", "delta", "turn", "error"):
        return None
    try:
        data = json.loads(event.data)
        if event.event == "memory":
            return MemoryEvent(tuple(Source.from_json(s) for s in data.get("sources") or []))
        if event.event == "delta":
            return DeltaEvent(str(data["text"]))
        if event.event == "turn":
            return TurnEvent(turn_of(data))
        status = int(data.get("status") or 500)
        error = data.get("error") or {}
        code = str(error.get("code") or "internal_error")
        message = str(error.get("message") or code.replace("_", " "))
        return ErrorEvent(error_class(status, code)(status, code, message))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ChatMemoryError(
            200, "invalid_answer", f"a {event.event} event that is not what the API sends"
        ) from error


class MessageStream(Iterator[StreamEvent]):
    """The events of one streamed answer, as they come; also a context manager. After the last
    event, `turn` is the stored turn (None if the stream failed or was closed before), `text`
    the answer's text received so far, `sources` what memory put in the prompt."""

    def __init__(self, response: requests.Response) -> None:
        self._response = response
        self._chunks = response.iter_content(chunk_size=None)
        self._events = self._read()
        self._parts: list[str] = []
        self.sources: tuple[Source, ...] = ()
        self.turn: Turn | None = None
        self.closed = False

    @property
    def text(self) -> str:
        """The answer's text received so far (every delta, joined)."""
        return "".join(self._parts)

    def __iter__(self) -> MessageStream:
        return self

    def __next__(self) -> StreamEvent:
        if self.closed:
            raise StopIteration
        try:
            return next(self._events)
        except BaseException:  # the end, a failure, or Ctrl-C while waiting: the stream closes
            self.close()
            raise

    def collect(self) -> Turn:
        """Reads the rest of the stream and returns the stored turn, as send_message does;
        raises the error of an ErrorEvent."""
        for event in self:
            if isinstance(event, ErrorEvent):
                raise event.error
        if self.turn is None:
            raise ChatMemoryError(0, "stream_closed", "the stream was closed before its turn")
        return self.turn

    def close(self) -> None:
        """Closes the connection. Before the last event, this stops the answer: the server
        stores what it had sent, marked `stopped`."""
        if not self.closed:
            self.closed = True
            self._response.close()

    def __enter__(self) -> MessageStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _read(self) -> Iterator[StreamEvent]:
        try:
            for raw in events(self._chunks):
                event = typed(raw)
                if isinstance(event, MemoryEvent):
                    self.sources = event.sources
                elif isinstance(event, DeltaEvent):
                    self._parts.append(event.text)
                elif isinstance(event, TurnEvent):
                    self.turn = event.turn
                if isinstance(event, TurnEvent | ErrorEvent):
                    for _ in self._chunks:  # the end of the body: the connection is reusable
                        pass
                    yield event
                    return
                if event is not None:
                    yield event
        except requests.RequestException as error:
            raise ConnectionFailed(0, "connection_failed", f"the stream broke: {error}") from error
        raise ConnectionFailed(0, "stream_cut", "the stream ended before the stored turn came")
