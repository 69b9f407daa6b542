"""The ports of what a turn calls out to beside its stores (re-exported by ports.py): text
generation as pieces, embedders, the vector cache, sentiment, events, the clock, extraction and
summaries."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

from chatmemory.domain import (
    Sentiment,
    Turn,
)
from chatmemory.errors import ModelError
from chatmemory.index_port import Candidate as Candidate
from chatmemory.index_port import LongTermIndex as LongTermIndex
from chatmemory.index_port import MemoryDoc as MemoryDoc
from chatmemory.schema import RecordType

# --- text generation: answers made of pieces ----------------------------------------------------
# An answer is a sequence of pieces: its text as it comes (str deltas), then one Finish that says
# why it ended and what it cost. Buffered callers take the pieces collected (`collect`,
# TextGenerator.generate); a streaming caller reads them as they come.

# Why an answer ended (Finish.stop_reason). OpenAI's finish_reason of each: "stop" for END and
# STOP_SEQUENCE, "length" for LENGTH, "content_filter" for CONTENT_FILTER.
END = "end"  # the model ended its answer
STOP_SEQUENCE = "stop_sequence"  # at a stop sequence (the server's, or cut here)
LENGTH = "length"  # at the most tokens it was allowed
CONTENT_FILTER = "content_filter"  # a guardrail or content filter ended it


class Finish(NamedTuple):
    """The last piece of an answer."""

    stop_reason: str = END
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    # False for text no model wrote (the offline responder): it is not made into memory.
    remember: bool = True


# A text delta, or the Finish that ends the answer.
Piece = str | Finish


class Generation(NamedTuple):
    """An answer whole: its pieces collected."""

    text: str
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    remember: bool = True
    stop_reason: str = END


class GenerationOptions(NamedTuple):
    """What a caller asks of one answer. A backend honours the options named in its
    TextGenerator.honours and ignores the others: `TextGenerator.unsupported` tells which of a
    request's it cannot honour, so that a caller can refuse them instead."""

    max_new_tokens: int
    # Text from the first of these on is never part of the answer, whatever the backend.
    stop: tuple[str, ...] = ()
    # None: the backend's own default.
    temperature: float | None = None
    # A hint, never refused: how many characters at the start of the prompt stay the same from
    # one turn to the next (the system line and the profile block), which a backend that
    # caches prompts may cache (Bedrock's cachePoint).
    constant_prefix: int = 0


# Options that are hints: a backend that cannot use them ignores them (never `unsupported`).
HINTS = frozenset({"constant_prefix"})


def collect(pieces: Iterable[Piece]) -> Generation:
    """The answer whole from its pieces (the text of every delta, and the Finish's facts)."""
    text: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            text.append(piece)
        else:
            return Generation(
                "".join(text),
                piece.model,
                piece.input_tokens,
                piece.output_tokens,
                piece.remember,
                piece.stop_reason,
            )
    raise ModelError("the model's answer ended before it was finished")


def whole(generation: Generation) -> Iterator[Piece]:
    """The pieces of an answer that came whole: its text, then its Finish."""
    if generation.text:
        yield generation.text
    yield Finish(
        generation.stop_reason,
        generation.model,
        generation.input_tokens,
        generation.output_tokens,
        generation.remember,
    )


class TextGenerator(Protocol):
    """A text model. Adapters subclass it: they implement `pieces`, and `generate` (the answer
    collected) and `unsupported` come with it."""

    name: str
    # The model's input limit in tokens; prompts are clipped to fit it.
    context_tokens: int
    # The GenerationOptions fields this backend honours (none unless it says).
    honours: frozenset[str] = frozenset()

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        """The answer to `prompt` as pieces, the last a Finish; nothing of it from a stop
        sequence on. With `stream`, from the backend's streaming call where it has one (its
        text as the model writes it); without, from its whole answer (one request, the call a
        buffered answer makes). Fails with ModelUnavailable or ModelError, before or between
        pieces."""
        ...

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        """The whole answer: the pieces of one buffered call, collected."""
        return collect(self.pieces(prompt, GenerationOptions(max_new_tokens, tuple(stop))))

    def unsupported(self, options: GenerationOptions) -> dict[str, str]:
        """The options of a request this backend cannot honour, each with why (an option is
        asked for unless it is None or empty; max_new_tokens always is)."""
        return {
            name: f"{self.name} cannot honour {name}"
            for name, value in zip(options._fields, options, strict=True)
            if value not in (None, ()) and name not in self.honours and name not in HINTS
        }


class Embedder(Protocol):
    name: str
    dimension: int
    # How many texts one request may carry (1 for endpoints without batch input).
    max_batch: int
    # Whether `name` always serves the same model (a Bedrock model id, whose version is part of
    # it), so vectors kept under it stay that model's; an endpoint or a server keeps its name
    # when another model is deployed behind it (False).
    pins_model: bool

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of what is stored and searched (windows, summaries, records, passages)."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder whose model embeds a search query apart from what it searches:
    multilingual-e5 was trained with "query: " before questions and "passage: " before
    documents, and compares the two (each embedded as the other loses recall)."""

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of search queries (a question, a message, a small-talk phrasing): the
    embedder's query side when its model has one, else its one way of embedding."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


class VectorCache(Protocol):
    """Vectors kept across processes under a key, so that a cold start reads them instead of
    embedding the same texts again (auto-recall's small-talk phrasings). They come back as
    float32 values, as they are kept."""

    def load(self, key: str) -> list[list[float]] | None:
        """The vectors saved under `key`, or None; a ChatMemoryError when the store is down."""
        ...

    def save(self, key: str, vectors: Sequence[Sequence[float]]) -> None:
        """Keep `vectors` under `key` (a set too large to keep is not kept)."""
        ...


class SentimentAnalyzer(Protocol):
    """The sentiment of one user message (VADER in process, or the text model)."""

    name: str

    def analyze(self, text: str) -> Sentiment: ...


class EventPublisher(Protocol):
    """Where the hand-off's events go: EventBridge in AWS, a JSON-lines file in local mode."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        """One event of source schema.EVENT_SOURCE; raises EventsUnavailable on failure."""
        ...


class Clock(Protocol):
    def __call__(self) -> datetime: ...


@dataclass
class ExtractedFact:
    """A durable fact or preference found in a session: what, about what, said at which turn."""

    type: RecordType
    text: str
    subject: str  # what it is about ("residence", "likes:coffee"), "" when nothing in particular
    turn: int


class Extractor(Protocol):
    name: str

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """The user's durable facts and preferences in `turns`, each with its turn."""
        ...


@runtime_checkable
class PeopleExtractor(Extractor, Protocol):
    """An extractor that reads a statement about someone by their name alone ("Mia turned 8")
    as the user's when the user's profile has named them ("My daughter Mia is 7")."""

    def extract_knowing(self, turns: Sequence[Turn], people: frozenset[str]) -> list[ExtractedFact]:
        """As `extract`, with `people`: the names of the user's people the profile holds."""
        ...


class Summarizer(Protocol):
    name: str

    def summarize(self, text: str) -> str: ...

    def extend(self, summary: str, new_text: str) -> str:
        """The summary of what `summary` covered followed by `new_text`."""
        ...
