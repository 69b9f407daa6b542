"""A stand-in OpenAI-compatible model that streams (on tests/model_server.py's scripted server):
chat.completion.chunk events written one by one, held where the test says (an Event, a delay),
or without end until the reader goes away; requests without `stream` get a short answer (the
other model calls a turn or a consolidation makes)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import pytest

from chatmemory import schema, wiring
from tests.model_server import Received, Reply, ScriptedServer


def chunk(text: str = "", finish: str | None = None) -> bytes:
    """One server-sent chat.completion.chunk."""
    choice = {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
    body = {
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "standin",
        "choices": [choice],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def answer(pieces: Iterable[str | threading.Event], *, delay: float = 0.0) -> Iterator[bytes]:
    """The chunks of an answer written piece by piece (`delay` seconds before each, an Event
    waited for), then its end."""
    for piece in pieces:
        if isinstance(piece, threading.Event):
            if not piece.wait(10):
                return
            continue
        time.sleep(delay)
        yield chunk(piece)
    yield chunk(finish="stop")
    yield b"data: [DONE]\n\n"


def endless(first: Sequence[str], *, delay: float = 0.01) -> Iterator[bytes]:
    """An answer that never ends: `first`, then "more " every `delay` seconds until the reader
    closes the connection (the server stopped the model)."""
    for piece in first:
        yield chunk(piece)
    while True:
        time.sleep(delay)
        yield chunk("more ")


class StandInModel(ScriptedServer):
    """The stand-in model: each streamed request is answered by the next of `streams` (chunks,
    sent as they come), any other request (and a streamed one when none is left) with
    "Noted."."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[Iterable[bytes]] = []
        self.answer = self._answer

    def _answer(self, received: Received) -> Reply:
        if received.json().get("stream"):
            chunks = self.streams.pop(0) if self.streams else answer(["Noted."])
            return Reply(chunks=_Chunks(chunks), content_type="text/event-stream")
        return Reply(
            body={
                "id": "chatcmpl-standin",
                "object": "chat.completion",
                "model": "standin",
                "choices": [
                    {"index": 0, "message": {"content": "Noted."}, "finish_reason": "stop"}
                ],
            }
        )


class _Chunks(Sequence[bytes]):
    """Chunks written as they are made (the scripted server iterates `Reply.chunks` once)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def __len__(self) -> int:
        return 1  # not empty: the server streams it

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        raise TypeError("read once, in order")


@contextmanager
def stand_in_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInModel]:
    """Local mode's text model is the stand-in (TEXT_BACKEND=openai at its URL) while this
    lasts; its settings and clients are made anew for it."""
    with StandInModel() as model:
        monkeypatch.setenv(schema.ENV_TEXT_BACKEND, "openai")
        monkeypatch.setenv(schema.ENV_OPENAI_BASE_URL, model.url + "/v1")
        monkeypatch.setenv(schema.ENV_TEXT_MODEL_ID, "standin")
        wiring.clear_caches()
        try:
            yield model
        finally:
            # Whatever the model is still writing stops with the server.
            wiring.clear_caches()
