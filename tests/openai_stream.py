"""Local mode's text model as the stand-in OpenAI-compatible model of bench/openai_standin.py
(chat.completion.chunk events written one by one, held where the test says, or without end
until the reader goes away; requests without `stream` get a short answer)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench.openai_standin import StandInModel
from bench.openai_standin import answer as answer
from bench.openai_standin import chunk as chunk
from bench.openai_standin import endless as endless
from chatmemory import schema, wiring


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
