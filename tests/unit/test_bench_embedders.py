"""bench.embedders' vector cache: each text embedded once across runs, a query side apart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.embedders import CachedEmbedder


class _Counting:
    name, dimension, max_batch, pins_model = "counting", 2, 8, True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen += [f"p:{t}" for t in texts]
        return [[float(len(t)), 0.0] for t in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen += [f"q:{t}" for t in texts]
        return [[0.0, float(len(t))] for t in texts]


def test_each_text_is_embedded_once_across_runs_and_a_query_apart(tmp_path: Path) -> None:
    inner = _Counting()
    first = CachedEmbedder(inner, tmp_path / "counting.pickle")
    assert first.embed(["a dog", "a dog", "a cat"]) == [[5.0, 0.0], [5.0, 0.0], [5.0, 0.0]]
    assert first.embed_queries(["a dog"]) == [[0.0, 5.0]]
    first.save()
    later = CachedEmbedder(inner, tmp_path / "counting.pickle")
    assert later.embed(["a cat"]) == [[5.0, 0.0]] and later.embed_queries(["a dog"]) == [[0.0, 5.0]]
    assert inner.seen == ["p:a dog", "p:a cat", "q:a dog"] and later.embedded == 0
    # A run sharing the file picks up what another kept meanwhile.
    other = CachedEmbedder(_Counting(), tmp_path / "counting.pickle")
    other.embed(["a bird"])
    other.save()
    assert later.embed(["a bird"]) == [[6.0, 0.0]] and later.embedded == 0
