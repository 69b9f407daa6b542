"""bench.embedders: its vector cache (each text embedded once across runs, a query side apart),
its ensembles of embedders and its paired comparison."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.embedders import CachedEmbedder, Ensemble, paired


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


class _Fixed:
    """An embedder with set vectors: passages and queries apart."""

    max_batch, pins_model = 4, True

    def __init__(
        self, name: str, passages: dict[str, list[float]], queries: dict[str, list[float]]
    ):
        self.name, self.dimension = name, len(next(iter(passages.values())))
        self.passages, self.queries = passages, queries

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.passages[t] for t in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.queries[t] for t in texts]


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_an_ensembles_cosine_is_the_weighted_mean_of_its_parts(tmp_path: Path) -> None:
    """What the measurement of two embedders together rests on: the joined vectors' cosine is
    each part's cosine weighed as asked, whatever the parts' lengths, each on its own side."""
    one = _Fixed("one", {"doc": [3.0, 4.0]}, {"q": [4.0, 3.0]})
    two = _Fixed("two", {"doc": [0.0, 2.0, 0.0]}, {"q": [1.0, 1.0, 0.0]})
    joined = Ensemble([(one, 0.3), (two, 0.9)])
    [doc], [query] = joined.embed(["doc"]), joined.embed_queries(["q"])
    assert joined.dimension == 5 and len(doc) == 5
    assert abs(np.linalg.norm(doc) - 1) < 1e-9 and abs(np.linalg.norm(query) - 1) < 1e-9
    expected = 0.25 * _cos([3, 4], [4, 3]) + 0.75 * _cos([0, 2, 0], [1, 1, 0])
    assert abs(float(np.dot(doc, query)) - expected) < 1e-9


def test_the_paired_comparison_counts_each_sides_questions() -> None:
    assert paired("1100", "1011") == {"wins": 2, "losses": 1, "p": 1.0}
    # 12 questions one way and none the other: p = 2 * 0.5**12
    assert paired("0" * 12 + "1", "1" * 13) == {"wins": 12, "losses": 0, "p": 0.0}
    assert paired("1", "1") == {"wins": 0, "losses": 0, "p": 1.0}
