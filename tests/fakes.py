"""Fakes of the model ports for tests: deterministic, recording every call."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chatmemory.errors import ModelUnavailable
from chatmemory.ports import Finish, GenerationOptions, Piece, TextGenerator

_WORDS = re.compile(r"\S+\s*|\s+")


def reply_pieces(text: str, model: str, *, stream: bool) -> Iterator[Piece]:
    """A fake's reply as pieces: whole, or word by word when streamed."""
    yield from _WORDS.findall(text) if stream else [text]
    yield Finish(model=model)


@dataclass
class FakeGenerator(TextGenerator):
    """Answers "reply #<n> to: <last user line>" and records the prompts it saw."""

    name: str = "fake-llm"
    context_tokens: int = 512
    reply: Callable[[str], str] | None = None
    fail_next: int = 0
    prompts: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    honours = frozenset({"max_new_tokens", "stop", "temperature"})

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        with self._lock:
            self.prompts.append(prompt)
            if self.fail_next > 0:
                self.fail_next -= 1
                raise ModelUnavailable("fake model is down")
            count = len(self.prompts)
        if self.reply is not None:
            text = self.reply(prompt)
        else:
            last_user = [line for line in prompt.splitlines() if line.startswith("User: ")][-1]
            text = f"reply #{count} to: {last_user[6:]}"
        yield from reply_pieces(text, self.name, stream=stream)

    @property
    def calls(self) -> int:
        return len(self.prompts)


class SerializedClient:
    """Wraps a boto3 client so each API call runs alone, as one DynamoDB request is atomic.

    moto's in-process backend is not safe when threads interleave inside one request."""

    _lock = threading.Lock()

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name == "get_paginator":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return call


@dataclass
class FakeEmbedder:
    """Bag-of-words hashed into 64 dimensions, unit length: texts sharing words are close."""

    name: str = "fake-embedder"
    dimension: int = 64
    max_batch: int = 16
    pins_model: bool = False
    calls: int = 0
    fail: Callable[[Sequence[str]], bool] | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import math
        import re
        import zlib

        self.calls += 1
        if self.fail is not None and self.fail(texts):
            raise ModelUnavailable("fake embedder is down")
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


@dataclass
class FakeSummarizer:
    """Keeps the first line of each speaker turn: deterministic and easy to assert on."""

    name: str = "fake-summarizer"
    calls: int = 0

    def summarize(self, text: str) -> str:
        self.calls += 1
        return " ".join(line for line in text.splitlines() if line.startswith("User:"))[:500]

    def extend(self, summary: str, new_text: str) -> str:
        self.calls += 1
        return (summary + " | " + self.summarize(new_text)).strip(" |")


def indexed(index: Any, name: str) -> int:
    """How many entries an embedded long-term index holds in one of its indexes (tests read
    the SQLite file directly: the port has no count, nothing in the product needs one)."""
    found = index._db.execute("SELECT count(*) FROM docs WHERE idx = ?", (name,))
    return int(found.fetchone()[0])


class PausesOnUpsert:
    """A long-term index mixin (put it first in the bases): calls `hook` once, just before or
    just after its next write (`moment`), where a concurrent delete may land."""

    hook: Callable[[], None] | None = None
    moment = "after"

    def upsert(self, index: str, docs: Any) -> None:
        if self.moment == "before":
            self._fire()
        super().upsert(index, docs)  # type: ignore[misc]
        if self.moment == "after":
            self._fire()

    def _fire(self) -> None:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()


@dataclass
class FixedClock:
    """A clock that says `now` until a test moves it."""

    now: datetime = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def once_stored(
    memory: Any, session_id: str, number: int, then: Callable[[], Any]
) -> Callable[[], None]:
    """`then` as a HookedModel `during` hook that stands for what happens while a message is
    answered once it is stored (turn `number` of the session): a message answered alone is
    written beside its model's call (services/conversation/turn/stacked._beside_the_write), and
    the hook waits for that write, as a request arriving later than it would."""

    def hook() -> None:
        deadline = time.monotonic() + 30
        while memory.get_turn(session_id, number) is None:
            assert time.monotonic() < deadline, f"turn {number} was never stored"
            time.sleep(0.001)
        then()

    return hook


@dataclass
class HookedModel(TextGenerator):
    """Answers `prefix` + the user's last message (its lines joined by " | "), and runs each of
    `during` (once, in order) inside a call: a second request interleaved with a model call."""

    prefix: str = "answer to: "
    prompts: list[str] = field(default_factory=list)
    during: list[Callable[[], None]] = field(default_factory=list)
    fail: int = 0
    name: str = "model"
    context_tokens: int = 2048
    honours = frozenset({"max_new_tokens", "stop", "temperature"})

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        self.prompts.append(prompt)
        if self.during:
            self.during.pop(0)()
        if self.fail:
            self.fail -= 1
            raise ModelUnavailable("the model is down")
        last = prompt.rsplit("User: ", 1)[-1].split("\nAssistant:")[0]
        yield from reply_pieces(
            self.prefix + " | ".join(last.splitlines()), self.name, stream=stream
        )


@dataclass
class InMemoryVectorCache:
    """VectorCache in a dict, float32 as DynamoVectorCache keeps them; `down` makes every call
    an outage."""

    saved: dict[str, list[list[float]]] = field(default_factory=dict)
    loads: int = 0
    down: bool = False

    def load(self, key: str) -> list[list[float]] | None:
        from chatmemory.errors import ShortTermMemoryUnavailable

        self.loads += 1
        if self.down:
            raise ShortTermMemoryUnavailable("fake vector cache is down")
        return self.saved.get(key)

    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None:
        from array import array

        from chatmemory.errors import ShortTermMemoryUnavailable

        if self.down:
            raise ShortTermMemoryUnavailable("fake vector cache is down")
        self.saved[key] = [array("f", v).tolist() for v in vectors]
