"""What every model adapter does around a call: JSON over a runtime API, reading an answer of
the expected shape, stop words, and batched, checked, unit-length embeddings."""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

from chatmemory.adapters.retry import model_errors
from chatmemory.errors import ModelError
from chatmemory.limits import BatchLimit, batches
from chatmemory.ports import Piece
from chatmemory.services.prompt import AntipromptFilter, Trim, filter_pieces

T = TypeVar("T")

# TGI (--max-stop-sequences) and the OpenAI API both refuse more than 4 stop sequences, and
# some Bedrock models cap the count too; any further ones are still cut locally.
MAX_SERVER_STOPS = 4


class JsonApi(NamedTuple):
    """How a runtime API names a request's body, its content type and what it accepts (its
    answer's body goes by the request's body name), and what its model's absence means (the
    end of ModelUnavailable's message)."""

    body: str
    content_type: str
    accept: str
    missing: str


def invoke_json(
    call: Callable[..., Any], api: JsonApi, payload: Any, target: str, **params: Any
) -> Any:
    """Send `payload` as JSON through `call`, a runtime API that names a request's parts as
    `api` says (`params`: the rest of the request), and parse the answer; every failure becomes
    ModelUnavailable or ModelError naming `target`."""
    json_type = "application/json"
    params.update({api.content_type: json_type, api.accept: json_type})
    params[api.body] = json.dumps(payload).encode("utf-8")
    with model_errors(target, missing=api.missing):
        raw = call(**params)[api.body].read()
    return parse_json(raw, target)


def parse_json(raw: bytes, target: str) -> Any:
    """A model's JSON answer; anything else is a ModelError."""
    try:
        return json.loads(raw)
    except ValueError as error:
        raise ModelError(
            f"{target} answered with something that is not JSON: {_snippet(raw)}"
        ) from error


def read_answer(target: str, data: Any, read: Callable[[Any], T]) -> T:
    """Apply `read` to a parsed answer; an answer of another shape is a ModelError."""
    try:
        return read(data)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        raise ModelError(
            f"{target} answered in an unexpected shape ({error!r}): {_snippet(data)}"
        ) from error


def server_stops(stop: Sequence[str]) -> list[str]:
    """The stop sequences to send to a server that supports them."""
    return [word for word in stop if word][:MAX_SERVER_STOPS]


def cut_at_stop(pieces: Iterable[Piece], stop: Sequence[str]) -> Iterator[Piece]:
    """An answer's pieces up to its first stop sequence, trimmed, even a stop sequence split
    across pieces: for models that cannot stop by themselves (FLAN-T5), that return the stop
    sequence with the text (TGI), and stop sequences past what a server takes."""
    return filter_pieces(pieces, AntipromptFilter(stop), Trim())


def server_sent_events(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The data of each server-sent event in a byte stream whose chunks end anywhere (TGI's
    stream, an OpenAI-compatible one): its "data:" lines joined, once the blank line that ends
    the event has come (an event the stream ends in the middle of is not one)."""
    rest, data = b"", list[bytes]()
    for chunk in chunks:
        *lines, rest = (rest + chunk).split(b"\n")
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                if data:
                    yield b"\n".join(data)
                data = []
            elif line.startswith(b"data:"):
                value = line[len(b"data:") :]
                data.append(value[1:] if value.startswith(b" ") else value)
            # Other fields (event:, id:, retry:) and comments (":") say nothing more here.


def token_bound(text: str) -> int:
    """The most tokens any subword tokenizer can make of `text`, special tokens aside.

    A token of a BPE (byte-level or with byte fallback), WordPiece or SentencePiece vocabulary
    covers at least one byte of the UTF-8 text it reads, so a text is at most as many tokens as
    it has bytes, whatever its script (a CJK character is 3 bytes and 1 to 3 tokens). Tokenizers
    that NFKC-normalize first can lengthen a character (U+FDFA becomes 18), so a non-ASCII
    character counts as the bytes of its normalized form."""
    if text.isascii():
        return len(text)
    return sum(_char_bound(ch) for ch in text)


def clip_to_token_bound(text: str, tokens: int) -> str:
    """The longest start of `text` that no tokenizer makes more than `tokens` tokens of
    (token_bound): what a model with an input limit of `tokens` accepts whatever the script."""
    if text.isascii():
        return text[:tokens]
    used = 0
    for end, ch in enumerate(text):
        used += _char_bound(ch)
        if used > tokens:
            return text[:end]
    return text


def _char_bound(ch: str) -> int:
    if ch < "\x80":
        return 1
    # surrogatepass: a lone surrogate (which a JSON request may carry) is 3 bytes, not an error.
    return len(unicodedata.normalize("NFKC", ch).encode("utf-8", "surrogatepass"))


def json_text_bytes(text: str) -> int:
    """The bytes `text` takes in a JSON request body as invoke_json writes it (json.dumps
    escapes every non-ASCII character: 6 bytes for a CJK character, 12 for an emoji), with the
    separator that follows it in a list."""
    return len(json.dumps(text)) + 2


def embed_in_batches(
    texts: Sequence[str],
    *,
    max_batch: int,
    dimension: int,
    target: str,
    embed_batch: Callable[[list[str]], list[Any]],
    max_bytes: int = sys.maxsize,
    size_of: Callable[[str], int] = json_text_bytes,
) -> list[list[float]]:
    """Embed `texts` in requests of at most `max_batch` texts whose sizes (`size_of`) add up to
    at most `max_bytes`, check each vector and scale it to unit length (the long-term index
    scores by inner product, which is the cosine for unit vectors)."""
    vectors: list[list[float]] = []
    for chunk in batches(list(texts), size_of, BatchLimit(count=max_batch, bytes=max_bytes)):
        rows = embed_batch(chunk)
        if len(rows) != len(chunk):
            raise ModelError(f"{target} returned {len(rows)} embeddings for {len(chunk)} texts")
        vectors.extend(_unit_vector(row, dimension, target) for row in rows)
    return vectors


def _unit_vector(row: Any, dimension: int, target: str) -> list[float]:
    vector = read_answer(target, row, lambda r: [float(x) for x in r])
    if len(vector) != dimension:
        raise ModelError(
            f"{target} returns {len(vector)}-dimensional embeddings but {dimension} are "
            f"configured: set EMBED_DIMENSION={len(vector)} (and build the long-term index with "
            "it) or use a model of the configured size"
        )
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else vector


def _snippet(data: Any, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else repr(data)
    return text if len(text) <= limit else text[:limit] + "..."
