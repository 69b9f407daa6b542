"""Long-term search latency of the embedded index at 1k, 10k and 100k memories.

Each query is what /past does after embedding the question: a filtered vector search, a BM25
search and the shared ranking (search_sessions with a precomputed query vector). Memories are
windows of two lines of real dialogue (DialogSum and LoCoMo from ../shared/data, read at run
time) with random unit vectors of the MiniLM dimension (vector search costs the same whatever
the values); queries are LoCoMo's questions. Two layouts: one user owning every memory (the
worst case for the per-user filter) and the same memories spread over 100 users.

    python -m bench.search [--data ../shared/data] [--sizes 1000,10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.ports import MemoryDoc
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.longterm.recall import RecallWeights, search_sessions

DIMENSION = 384
DOCS_PER_SESSION = 8
NOW = datetime(2026, 11, 1, tzinfo=UTC)


class _FixedEmbedder:
    """Returns the query vector it was given: the benchmark times the index, not the model."""

    name = "fixed"
    dimension = DIMENSION
    max_batch = 1
    pins_model = False

    def __init__(self) -> None:
        self.vector: list[float] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector for _ in texts]


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@dataclass
class Corpus:
    lines: list[str]
    questions: list[str]


def load_corpus(data: Path) -> Corpus:
    """Dialogue lines and questions from the shared benchmark data."""
    lines: list[str] = []
    for raw in (data / "dialogsum.dev.jsonl").read_text(encoding="utf-8").splitlines():
        dialogue = json.loads(raw)["dialogue"]
        lines += [line.split(": ", 1)[-1] for line in dialogue.splitlines() if line.strip()]
    questions: list[str] = []
    for conversation in json.loads((data / "locomo-dev.json").read_text(encoding="utf-8")):
        talk = conversation["conversation"]
        for key, turns in talk.items():
            if key.startswith("session_") and isinstance(turns, list):
                lines += [str(turn.get("text", "")) for turn in turns]
        questions += [str(qa["question"]) for qa in conversation["qa"]]
    return Corpus([line for line in lines if line], questions)


def build(
    path: Path, size: int, users: int, corpus: Corpus, rng: np.random.Generator
) -> EmbeddedLongTermIndex:
    index = EmbeddedLongTermIndex(path)
    vectors = _unit(rng.standard_normal((size, DIMENSION)).astype(np.float32))
    batch: list[MemoryDoc] = []
    for i in range(size):
        session = i // DOCS_PER_SESSION
        created = NOW - timedelta(hours=int(session))
        batch.append(
            MemoryDoc(
                doc_key=f"s{session}#chunk-{i}",
                user_id=f"user-{session % users}",
                session_id=f"s{session}",
                kind="chunk",
                text=" ".join(corpus.lines[j % len(corpus.lines)] for j in (i, i + 1)),
                created_at=created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                embedding=vectors[i].tolist(),
            )
        )
        if len(batch) == 1000:
            index.upsert(MEMORY_INDEX, batch)
            batch = []
    index.upsert(MEMORY_INDEX, batch)
    return index


def measure(
    index: EmbeddedLongTermIndex,
    users: int,
    queries: int,
    corpus: Corpus,
    rng: np.random.Generator,
) -> dict[str, float]:
    embedder = _FixedEmbedder()
    weights = RecallWeights()
    timings: list[float] = []
    for q in range(queries + 5):
        embedder.vector = _unit(rng.standard_normal((1, DIMENSION)))[0].tolist()
        question = corpus.questions[int(rng.integers(len(corpus.questions)))]
        started = time.perf_counter()
        search_sessions(
            question,
            user_id=f"user-{q % users}",
            embedder=embedder,
            index=index,
            weights=weights,
            now=NOW,
            k=5,
        )
        if q >= 5:  # the first queries build the cached matrix
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {
        "p50_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(len(timings) * 0.95) - 1], 2),
    }


def run(data: Path, sizes: list[int], queries: int) -> list[dict[str, Any]]:
    corpus = load_corpus(data)
    rows = []
    for size in sizes:
        for users in (1, 100):
            rng = np.random.default_rng(size + users)
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                index = build(Path(tmp) / "memory.sqlite3", size, users, corpus, rng)
                built = time.perf_counter() - started
                row = {"memories": size, "users": users, "build_s": round(built, 1)}
                rows.append(row | measure(index, users, queries, corpus, rng))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    rows = run(args.data, [int(s) for s in args.sizes.split(",")], args.queries)
    print(f"{'memories':>9} {'users':>6} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for r in rows:
        print(
            f"{r['memories']:>9} {r['users']:>6} {r['build_s']:>8} "
            f"{r['p50_ms']:>8} {r['p95_ms']:>8}"
        )
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
