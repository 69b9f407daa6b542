"""The offline embedders against each other on LoCoMo (issue 42), each with its ranking refitted.

For each embedder of `providers.OFFLINE_EMBEDDERS` named by `--embedders`, the LoCoMo world is
built as `bench.locomo` builds it (import, end, consolidate: summaries, windows, the profile's
records, on moto), with that embedder; every vector it makes is kept on disk under `--cache`
(one file per embedder, outside the project), so a second run embeds nothing again. Then:

* `/past` (`services/longterm/recall.search_sessions`, as `bench.locomo --mode past`):
  recall_any@5, recall_all@5 and MRR with the shipped `RECALL_WEIGHTS`, and with each weighting
  of a small grid (the vector score's weight against the words' 1, and the named time's weight:
  the two numbers the ranking fits); leave one conversation out, each conversation is ranked
  with the grid point best on the other four (by recall_any@5 + recall_all@5 + MRR).
* chat (`auto_recall.memories_for_turn` then `build_block`, as `bench.fit_line_weights`, which
  reproduces `bench.locomo --mode chat`'s figure on the same world): evidence_in_prompt at the
  shipped budget with the shipped line weights (fitted on MiniLM's world), with weights refitted
  on all five conversations (in-sample), and leave one conversation out: each conversation with
  weights fitted on the other four, at the logistic regression's C=1 (as shipped) and at C=0.1
  (a stronger prior towards no weight).
* speed: the model's load, then 1,000 LoCoMo utterances embedded in the embedder's own batches
  (wall and process CPU; on a shared machine, with the load average beside them).
* each embedder after the first against it, question by question, leaving one conversation
  out: the questions it gets and the first misses, and the reverse, with the sign test's p.

An embedder may be several together, `a+b` (equal weights) or `a=0.3+b=0.7` (`Ensemble`), each
part's vectors from its own cache.

    python -m bench.embedders --data ../shared/data/locomo-dev.json \\
        --embedders all-MiniLM-L6-v2,all-mpnet-base-v2,multilingual-e5-small \\
        --cache /tmp/embeddings [--json]

The dataset is only read, never copied; the cache holds vectors only.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import pickle
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo import _aws_env, build, mock_stores, past_rows, summarize_metrics

# The /past grid: the vector score's weight (the words' stays 1) and the named time's.
VECTOR_WEIGHTS = (0.5, 0.75, 1.0, 1.5, 2.0)
TIME_WEIGHTS = (0.75, 1.5, 3.0)
SPEED_TURNS = 1000


class CachedEmbedder:
    """An embedder whose vectors are kept in a file: the same text (on the same side, query or
    passage) is embedded once across runs. Counts what it really embedded."""

    def __init__(self, inner: Any, path: Path) -> None:
        from chatmemory.ports import QueryEmbedder

        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_batch = inner.max_batch
        self.pins_model = inner.pins_model
        self.two_sided = isinstance(inner, QueryEmbedder)
        self.path = path
        self.vectors: dict[bytes, list[float]] = {}
        self._read = 0
        self._reload()
        self.embedded = 0
        self.seconds = 0.0

    def _reload(self) -> None:
        """What another run kept in the file since it was read (runs may share a cache)."""
        if self.path.exists() and self.path.stat().st_mtime_ns != self._read:
            self._read = self.path.stat().st_mtime_ns
            self.vectors |= pickle.loads(self.path.read_bytes())

    def _key(self, text: str, query: bool) -> bytes:
        side = "q" if query and self.two_sided else "p"
        return hashlib.sha1(f"{side}\0{text}".encode()).digest()

    def _get(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        from chatmemory.ports import embed_queries

        missing = list(dict.fromkeys(t for t in texts if self._key(t, query) not in self.vectors))
        if missing:
            self._reload()
            missing = [t for t in missing if self._key(t, query) not in self.vectors]
        if missing:
            tick = time.perf_counter()
            made = embed_queries(self.inner, missing) if query else self.inner.embed(missing)
            self.seconds += time.perf_counter() - tick
            self.embedded += len(missing)
            for text, vector in zip(missing, made, strict=True):
                self.vectors[self._key(text, query)] = vector
        return [self.vectors[self._key(t, query)] for t in texts]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._get(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._get(texts, query=True)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._reload()
        scratch = self.path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_bytes(pickle.dumps(self.vectors))
        scratch.replace(self.path)
        self._read = self.path.stat().st_mtime_ns


class Ensemble:
    """Several embedders as one: each part's vector (unit length) scaled by the square root of
    its weight, then joined. With weights summing to 1 the joined vector has unit length and
    its cosine with another is the weighted mean of the parts' cosines (score fusion in the
    vectors, so every index and ranking takes it unchanged). `name` is `a+b` (equal weights) or
    `a=0.3+b=0.7`."""

    def __init__(self, parts: Sequence[tuple[Any, float]]) -> None:
        total = sum(w for _, w in parts)
        self.parts = [(embedder, (w / total) ** 0.5) for embedder, w in parts]
        self.name = "+".join(f"{e.name}={w * w:.2f}" for e, w in self.parts)
        self.dimension = sum(e.dimension for e, _ in self.parts)
        self.max_batch = min(e.max_batch for e, _ in self.parts)
        self.pins_model = False

    def _joined(self, each: list[list[list[float]]]) -> list[list[float]]:
        out = []
        for vectors in zip(*each, strict=True):
            pieces = []
            for vector, (_, scale) in zip(vectors, self.parts, strict=True):
                v = np.asarray(vector, dtype=np.float64)
                pieces.append(v * (scale / max(float(np.linalg.norm(v)), 1e-12)))
            out.append(np.concatenate(pieces).tolist())
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._joined([e.embed(texts) for e, _ in self.parts])

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        from chatmemory.ports import embed_queries

        return self._joined([embed_queries(e, texts) for e, _ in self.parts])

    def save(self) -> None:
        for embedder, _ in self.parts:
            embedder.save()

    @property
    def embedded(self) -> int:
        return sum(e.embedded for e, _ in self.parts)

    @property
    def seconds(self) -> float:
        return sum(e.seconds for e, _ in self.parts)


def ensemble_of(name: str, cache: Path) -> Ensemble:
    """`a=0.3+b=0.7` (or `a+b`): each part cached in its own file, as when measured alone."""
    parts = []
    for part in name.split("+"):
        model, _, weight = part.partition("=")
        parts.append((CachedEmbedder(embedder_of(model)[1], cache / f"{model}.pickle"), weight))
    return Ensemble([(e, float(w or 1)) for e, w in parts])


def utterances(data: Path, count: int) -> list[str]:
    from bench.locomo import sessions_of

    out: list[str] = []
    for raw in json.loads(data.read_text()):
        for _, _, messages in sessions_of(raw["conversation"]):
            out += [str(m.get("text", "")) for m in messages]
    return out[:count]


def speed(inner: Any, texts: list[str]) -> dict[str, float]:
    """Seconds to load the model (its first embedding of one text), then per 1,000 texts."""
    cpu = time.process_time()
    tick = time.perf_counter()
    inner.embed(["warm up"])
    load = time.perf_counter() - tick
    cpu_load = time.process_time() - cpu
    cpu = time.process_time()
    tick = time.perf_counter()
    for start in range(0, len(texts), inner.max_batch):
        inner.embed(texts[start : start + inner.max_batch])
    wall = time.perf_counter() - tick
    per = 1000 / len(texts)
    return {
        "load_s": round(load, 1),
        "load_cpu_s": round(cpu_load, 1),
        "per_1000_turns_s": round(wall * per, 1),
        "per_1000_turns_cpu_s": round((time.process_time() - cpu) * per, 1),
        "load_average": round(os.getloadavg()[0], 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _score(m: dict[str, float]) -> float:
    return m["recall_any@5"] + m["recall_all@5"] + m["mrr"]


class _SearchedOnce:
    """The index with its hybrid search kept per question: the grid's weightings rank the same
    candidates (the weights only fuse them), so each question is searched once."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self._found: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def hybrid_search(self, search: Any) -> Any:
        key = (search.index, search.text, search.k, search.user_id, search.sessions_only)
        if key not in self._found:
            self._found[key] = self._index.hybrid_search(search)
        return self._found[key]


def per_question(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Each question's outcome (in the world's order), for a paired comparison of two
    embedders: recall_any@5 and recall_all@5 as 1/0, and the rank of the first gold session
    (0: not in the top 10)."""
    first = [next((i + 1 for i, s in enumerate(r["ranked"]) if s in r["gold"]), 0) for r in rows]
    return {
        "recall_any@5": "".join("1" if set(r["ranked"][:5]) & r["gold"] else "0" for r in rows),
        "recall_all@5": "".join("1" if r["gold"] <= set(r["ranked"][:5]) else "0" for r in rows),
        "first_rank": ",".join(map(str, first)),
    }


def paired(a: str, b: str) -> dict[str, Any]:
    """Questions `b` gets and `a` misses, and the reverse, with the two-sided sign test's p:
    how likely a split at least this uneven is when neither is better."""
    wins = sum(x == "0" and y == "1" for x, y in zip(a, b, strict=True))
    losses = sum(x == "1" and y == "0" for x, y in zip(a, b, strict=True))
    n, low = wins + losses, min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n if n else 1.0
    return {"wins": wins, "losses": losses, "p": round(min(1.0, 2 * tail), 3)}


def against(first: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """`other` against `first`, question by question, leaving one conversation out."""
    a, b = first["past"]["leave_one_out"], other["past"]["leave_one_out"]
    out = {
        m: paired(a["per_question"][m], b["per_question"][m])
        for m in ("recall_any@5", "recall_all@5")
    }
    key = "evidence_in_prompt_c1.0"
    out[key] = paired(first["chat"]["per_question"][key], other["chat"]["per_question"][key])
    return {"embedder": first["embedder"]} | out


def past(world: Any) -> dict[str, Any]:
    """/past with the shipped weights and each grid point, in-sample and leave one out."""
    from chatmemory import wiring

    searched = _SearchedOnce(world.index)

    shipped = wiring.chat_policy(world.settings).recall_weights
    grid = [
        shipped._replace(vector=v, lexical=1.0, time=t)
        for v, t in itertools.product(VECTOR_WEIGHTS, TIME_WEIGHTS)
    ]
    if shipped not in grid:
        grid.append(shipped)
    rows = {weights: past_rows(world, weights, 10, searched) for weights in grid}

    def overall(subset: list[dict[str, Any]]) -> dict[str, float]:
        metrics = summarize_metrics(subset, [5])["overall"]
        return {k: metrics[k] for k in ("recall_any@5", "recall_all@5", "mrr")}

    users = [c.user for c in world.conversations]
    best = max(grid, key=lambda w: _score(overall(rows[w])))

    def left_out(points: list[Any]) -> dict[str, Any]:
        held: list[dict[str, Any]] = []
        chosen: dict[str, tuple[float, float]] = {}
        for user in users:
            pick = max(
                points,
                key=lambda w: _score(overall([r for r in rows[w] if r["conversation"] != user])),
            )
            chosen[user] = (pick.vector, pick.time)
            held += [r for r in rows[pick] if r["conversation"] == user]
        return overall(held) | {"chosen": chosen, "per_question": per_question(held)}

    return {
        "shipped": overall(rows[shipped]) | {"weights": [shipped.vector, shipped.time]},
        "best_in_sample": overall(rows[best]) | {"weights": [best.vector, best.time]},
        "leave_one_out": left_out(grid),
        # One fitted number instead of two: the named time's weight stays the shipped one.
        "leave_one_out_vector_only": left_out([w for w in grid if w.time == shipped.time]),
    }


def chat(world: Any) -> dict[str, Any]:
    """evidence_in_prompt: shipped line weights, refitted on all five, and leave one out."""
    from bench.fit_line_weights import evidence_in_prompt, examples, fit
    from chatmemory.services.longterm.auto_recall import LINE_WEIGHTS

    rows = examples(world)
    by_user = {c.user: c for c in world.conversations}

    outcomes: dict[str, str] = {}

    def share(weights_of: Any, name: str) -> float:
        hits = [
            hit
            for user, conversation in by_user.items()
            for hit in evidence_in_prompt(world, conversation, rows[user], weights_of(user))
        ]
        outcomes[name] = "".join("1" if hit else "0" for hit in hits)
        return round(sum(hits) / max(len(hits), 1), 3)

    everything = [r for rs in rows.values() for r in rs]
    refitted = fit(everything)
    out: dict[str, Any] = {
        "shipped": share(lambda _: LINE_WEIGHTS, "shipped"),
        "refitted_in_sample": share(lambda _: refitted, "refitted"),
    }
    for c in (1.0, 0.1):
        on_all = fit(everything, c)
        out[f"refitted_in_sample_c{c}"] = share(lambda _, w=on_all: w, f"in{c}")  # type: ignore[misc]
        out[f"weights_c{c}"] = on_all._asdict()
        folds = {u: fit([r for v, rs in rows.items() if v != u for r in rs], c) for u in rows}
        out[f"leave_one_out_c{c}"] = share(lambda u, f=folds: f[u], f"c{c}")  # type: ignore[misc]
    out["per_question"] = {
        "evidence_in_prompt_c1.0": outcomes["c1.0"],
        "shipped": outcomes["shipped"],
    }
    return out


def reembed(world: Any, embedder: CachedEmbedder) -> int:
    """Every entry of the world's index embedded again by `embedder` (its text, as consolidation
    embedded it), and the world's questions embedded by it: the index's texts stay those the
    pipeline made."""
    index = world.index
    with index._lock, index._db:
        rows = index._db.execute("SELECT id, text FROM docs WHERE length(embedding) > 0").fetchall()
        vectors = []
        for start in range(0, len(rows), embedder.max_batch):
            part = rows[start : start + embedder.max_batch]
            vectors += embedder.embed([text for _, text in part])
        for (row_id, _), vector in zip(rows, vectors, strict=True):
            blob = np.asarray(vector, dtype=np.float32).tobytes()
            index._db.execute("UPDATE docs SET embedding = ? WHERE id = ?", (blob, row_id))
    index._matrices.clear()
    world.embedder = embedder
    return len(rows)


def ask_ahead(world: Any, embedder: CachedEmbedder) -> None:
    """The world's questions embedded on the query side in the model's own batches, before
    `/past` and chat ask them one at a time (as a user does): the same vectors (to float
    rounding: a batch pads), in a fraction of the time for a model whose single calls are slow."""
    from bench.locomo import _questions

    texts = list(
        dict.fromkeys(str(qa["question"]) for c in world.conversations for qa in _questions(c))
    )
    for start in range(0, len(texts), embedder.max_batch):
        embedder.embed_queries(texts[start : start + embedder.max_batch])


def embedder_of(name: str) -> tuple[Any, Any]:
    from chatmemory import wiring
    from chatmemory.providers import OFFLINE_EMBEDDERS
    from chatmemory.settings import Settings

    entry = OFFLINE_EMBEDDERS[name]
    settings = Settings.from_env({"EMBED_MODEL_ID": name, "EMBED_DIMENSION": str(entry.dimension)})
    return settings, wiring.embedder(settings)


def measure(
    names: list[str],
    data: Path,
    cache: Path,
    only: frozenset[str] = frozenset(),
    build_with: str = "",
    with_speed: bool = True,
) -> list[dict[str, Any]]:
    """The world built once, with `build_with` (the whole pipeline; the first embedder when not
    given); each embedder then embeds its entries again and is measured on it."""
    results: list[dict[str, Any]] = []
    first_name = build_with or names[0]
    settings, first = embedder_of(first_name)
    started = time.perf_counter()
    with mock_stores():
        world = build(
            data,
            settings=settings,
            embedder=CachedEmbedder(first, cache / f"{first_name}.pickle"),
            only=only,
        )
        world.embedder.save()
        built = round(time.perf_counter() - started, 1)
        print(f"built in {built} s", flush=True)
        for name in names:
            tick = time.perf_counter()
            if "+" in name:
                inner: Any = ensemble_of(name, cache)
            else:
                _, inner = embedder_of(name) if name != first_name else (settings, first)
            result: dict[str, Any] = {"embedder": name, "dimension": inner.dimension}
            if with_speed:
                result["speed"] = speed(inner, utterances(data, SPEED_TURNS))
            cached = inner if "+" in name else CachedEmbedder(inner, cache / f"{name}.pickle")
            result["entries"] = reembed(world, cached)
            ask_ahead(world, cached)
            cached.save()
            result["past"] = past(world)
            print(name, "past", result["past"], flush=True)
            result["chat"] = chat(world)
            cached.save()
            result["embedded_now"] = cached.embedded
            result["embedding_s"] = round(cached.seconds, 1)
            result["seconds"] = round(time.perf_counter() - tick, 1)
            result["build_s"] = built
            if results:
                result["against_first"] = against(results[0], result)
            results.append(result)
            print(json.dumps(result), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo-dev.json"))
    parser.add_argument("--embedders", default="all-MiniLM-L6-v2")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/chatmemory-embeddings"))
    parser.add_argument("--conversations", default="", help="only these sample ids (a check)")
    parser.add_argument("--speed", choices=("with", "without", "only"), default="with")
    parser.add_argument(
        "--build-with", default="", help="the embedder the world is built with (default: the first)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line per embedder")
    args = parser.parse_args()
    _aws_env()
    only = frozenset(c.strip() for c in args.conversations.split(",") if c.strip())
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    if args.speed == "only":
        for name in names:
            print(
                json.dumps(
                    {
                        "embedder": name,
                        "speed": speed(embedder_of(name)[1], utterances(args.data, SPEED_TURNS)),
                    }
                ),
                flush=True,
            )
        return
    results = measure(names, args.data, args.cache, only, args.build_with, args.speed == "with")
    for result in results:
        name = result["embedder"]
        p, c, s = result["past"], result["chat"], result.get("speed")
        print(
            f"{name}: /past shipped {p['shipped']}, best in-sample {p['best_in_sample']}, "
            f"LOO {p['leave_one_out']}; chat {c}; speed {s}; build {result['build_s']} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
