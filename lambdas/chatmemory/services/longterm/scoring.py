"""The one scorer of long-term memory: a document's meaning and words fused with one weight type
(`RecallWeights`), plus its recency and closeness to a named time. `/past` ranks sessions with
it (recall.rank_sessions), auto-recall the documents of a turn's block (auto_recall.rank_memories)
and record search the caller's records (profile.search); each with its own weights."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from chatmemory.clock import parse_time
from chatmemory.ports import Candidate, MemoryDoc
from chatmemory.schema import searched_apart
from chatmemory.services.longterm.when import TimeWindow, timeliness


class RecallWeights(NamedTuple):
    """How retrieval scores combine (RECALL_WEIGHTS="vector,lexical,recency,time")."""

    vector: float = 1.0
    lexical: float = 1.0
    # Off by default: on LoCoMo dev, 0.05 cost recall_all@5 in every conversation left out
    # (bench/RESULTS.md); a deployment that wants newer sessions first sets it.
    recency: float = 0.0
    half_life_days: float = 30.0
    # Candidates fetched per method, as a multiple of k (chunks of one session compete).
    depth: int = 8
    # A question that names a time ("in May", "on 3 June, 2023") favours sessions from then:
    # this much for a session inside that time, halving every `time_half_life_days` outside
    # (1.5 chosen leaving one LoCoMo conversation out among 0.5-3; bench/RESULTS.md).
    time: float = 1.5
    time_half_life_days: float = 7.0

    @classmethod
    def parse(cls, raw: str, half_life_days: float = 30.0) -> RecallWeights:
        """Weights from configuration; missing trailing values keep their defaults."""
        d = cls()
        defaults = [d.vector, d.lexical, d.recency, d.time]
        try:
            parts = [float(p) for p in raw.split(",")] if raw else []
        except ValueError as error:
            raise ValueError(f"RECALL_WEIGHTS must be up to 4 numbers, not {raw!r}") from error
        vector, lexical, recency, time = (parts + defaults[len(parts) :])[:4]
        return cls(vector, lexical, recency, half_life_days, time=time)


def recency_factor(created_at: str, now: datetime, half_life_days: float) -> float:
    """1.0 for a memory from now, 0.5 one half-life ago."""
    moment = parse_time(created_at)
    if moment is None or half_life_days <= 0:
        return 0.0
    age_days = max((now - moment).total_seconds() / 86_400, 0.0)
    return math.pow(0.5, age_days / half_life_days)


def fuse(
    vector_hits: Sequence[Candidate],
    lexical_hits: Sequence[Candidate],
    weights: RecallWeights,
    *,
    records_apart: bool = True,
) -> dict[str, tuple[MemoryDoc, float]]:
    """Per document: weighted cosine plus weighted BM25 normalised by the best BM25 of the query
    (BM25 is unbounded; cosine of unit vectors is at most 1). Profile records are scored with
    their own corpus statistics (schema.RECORD_TEXT_FIELD), on another scale: with
    `records_apart` each of the two is normalised by its own best (GET /memories/records ranks
    both; /past has sessions only); without, by the best of all (auto-recall's block, where
    normalising them apart put fewer gold turns in the prompt: bench/RESULTS.md)."""

    def corpus(hit: Candidate) -> bool:
        return records_apart and searched_apart(hit.doc.session_id, hit.doc.record_id)

    best: dict[bool, float] = {}
    for hit in lexical_hits:
        best[corpus(hit)] = max(best.get(corpus(hit), 0.0), hit.lexical_score or 0.0)
    fused: dict[str, tuple[MemoryDoc, float]] = {}
    for hit in vector_hits:
        score = weights.vector * max(hit.vector_score or 0.0, 0.0)
        fused[hit.doc.doc_key] = (hit.doc, score)
    for hit in lexical_hits:
        best_lexical = best[corpus(hit)]
        lexical = (hit.lexical_score or 0.0) / best_lexical if best_lexical > 0 else 0.0
        doc, score = fused.get(hit.doc.doc_key, (hit.doc, 0.0))
        fused[hit.doc.doc_key] = (doc, score + weights.lexical * lexical)
    return fused


def with_time(
    score: float,
    created_at: str,
    weights: RecallWeights,
    now: datetime,
    window: TimeWindow | None,
) -> float:
    """`score` plus the weighted recency of `created_at` and its closeness to the time the
    query names (`window`; none named: nothing)."""
    recency = recency_factor(created_at, now, weights.half_life_days)
    timely = timeliness(created_at, window, weights.time_half_life_days)
    return score + weights.recency * recency + weights.time * timely


def lexical_only(scores: Sequence[float], weights: RecallWeights) -> list[float]:
    """Weighted BM25 scores normalised by their best, for what the index did not rank (the
    fused score of a document with no vector hit)."""
    best = max(scores, default=0.0) or 1.0
    return [weights.lexical * score / best for score in scores]
