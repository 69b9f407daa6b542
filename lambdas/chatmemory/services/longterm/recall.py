"""Long-term recall: hybrid retrieval (vectors + BM25), ranking by similarity and recency, and
the one-model-call answers of `/past` and `/verified`. Every adapter shares this ranking code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from chatmemory.domain import Source
from chatmemory.errors import LongTermMemoryUnavailable
from chatmemory.ports import (
    Candidate,
    Embedder,
    LongTermIndex,
    MemoryDoc,
    Search,
    TextGenerator,
    UserRecords,
    embed_queries,
)
from chatmemory.schema import MEMORY_INDEX, PASSAGE_INDEX, SourceKind
from chatmemory.services.access import owner_of
from chatmemory.services.longterm.scoring import RecallWeights, fuse, recency_factor, with_time
from chatmemory.services.longterm.when import TimeWindow, time_window
from chatmemory.services.prompt import clip_middle, clip_to_tokens, estimate_tokens


@dataclass
class RankedSession:
    session_id: str
    score: float
    similarity: float
    recency: float
    date: str
    title: str
    texts: list[str] = field(default_factory=list)


@dataclass
class RankedPassage:
    doc: MemoryDoc
    score: float


def rank_sessions(
    vector_hits: Sequence[Candidate],
    lexical_hits: Sequence[Candidate],
    *,
    weights: RecallWeights,
    now: datetime,
    k: int,
    window: TimeWindow | None = None,
) -> list[RankedSession]:
    """Group document scores by session (a session is as good as its best document), then add
    recency and, when the question names a time, closeness to that time.

    Its other matching documents add nothing: a long conversation that touches a subject in
    several windows is not likelier to hold the answer than one window that says it (on
    LoCoMo dev, 0.2 of the 2nd and 3rd best added to the best cost 0.013 recall_any@5 and
    0.006 MRR, in each of the five conversations left out; bench/RESULTS.md)."""
    by_session: dict[str, list[tuple[MemoryDoc, float]]] = {}
    for doc, score in fuse(vector_hits, lexical_hits, weights).values():
        if doc.session_id:
            by_session.setdefault(doc.session_id, []).append((doc, score))
    ranked: list[RankedSession] = []
    for session_id, scored in by_session.items():
        scored.sort(key=lambda pair: -pair[1])
        similarity = scored[0][1]
        date = min(d.created_at for d, _ in scored)
        recency = recency_factor(date, now, weights.half_life_days)
        summary = next((d for d, _ in scored if d.kind == "summary"), None)
        ranked.append(
            RankedSession(
                session_id=session_id,
                score=with_time(similarity, date, weights, now, window),
                similarity=similarity,
                recency=recency,
                date=date,
                title=(summary or scored[0][0]).title,
                texts=[d.text for d, _ in scored[:3]],
            )
        )
    ranked.sort(key=lambda r: (-r.score, r.session_id))
    return ranked[:k]


# Which of these sessions and records exist for the caller and are visible (ShortTermMemory.live).
# Records come with their generation (MemoryDoc.of_live_record).
LiveCheck = Callable[[Sequence[str], Sequence[str]], tuple[set[str], dict[str, str]]]


def _still_there(
    hits: Sequence[Candidate], gone_sessions: set[str], gone_entries: set[str]
) -> list[Candidate]:
    """The hits whose session and entry were not found gone."""
    return [
        h
        for h in hits
        if h.doc.session_id not in gone_sessions and h.doc.doc_key not in gone_entries
    ]


def search_sessions(
    query: str,
    *,
    user_id: str,
    embedder: Embedder,
    index: LongTermIndex,
    weights: RecallWeights,
    now: datetime,
    k: int,
    live: LiveCheck | None = None,
) -> list[RankedSession]:
    """The caller's past sessions most relevant to `query` (filtered to user_id in the index).

    `live` says which sessions and records still exist for the caller: the index may hold
    entries of a session deleted a moment ago, or a session's summary entry whose record the
    caller deleted; those are dropped here, before anything is returned. The sessions of the
    top k are checked (one read, with the records their entries carry), then ranked again
    without what was gone, until the top k are all checked: usually one read."""
    vector = embed_queries(embedder, [query])[0]
    depth = k * weights.depth
    # Profile records (facts, preferences) share the index but belong to no session: they are
    # not asked for, so a caller with many records does not lose candidates to them (a
    # session's summary and open questions belong to it: they are found with it). (They
    # still share BM25's corpus statistics: on LoCoMo, MRR 0.813 with the records indexed,
    # 0.828 without; a separate index would isolate them. See bench/RESULTS.md.) One request:
    # a store without full-text search scores words over its vector candidates.
    vector_hits, lexical_hits = index.hybrid_search(
        Search(MEMORY_INDEX, vector, query, depth, user_id, sessions_only=True)
    )
    window = time_window(query, now)
    checked: set[str] = set()
    gone_sessions: set[str] = set()
    gone_entries: set[str] = set()  # entries of records gone (or of an earlier generation)
    while True:
        kept_vector, kept_lexical = (
            _still_there(hits, gone_sessions, gone_entries) for hits in (vector_hits, lexical_hits)
        )
        ranked = rank_sessions(
            kept_vector,
            kept_lexical,
            weights=weights,
            now=now,
            k=len(kept_vector) + len(kept_lexical),
            window=window,
        )[:k]
        unchecked = {s.session_id for s in ranked} - checked
        if live is None or not unchecked:
            return ranked
        alive_sessions, dead_entries = _check(vector_hits + lexical_hits, unchecked, live)
        checked |= unchecked
        gone_sessions |= unchecked - alive_sessions
        gone_entries |= dead_entries


def _check(
    hits: Sequence[Candidate], unchecked: set[str], live: LiveCheck
) -> tuple[set[str], set[str]]:
    """One read of the sessions `unchecked` and the records their hits carry: the sessions
    still there, and the entries whose record is gone."""
    records = {h.doc.record_id for h in hits if h.doc.session_id in unchecked and h.doc.record_id}
    alive_sessions, alive_records = live(sorted(unchecked), sorted(records))
    gone = {
        h.doc.doc_key
        for h in hits
        if h.doc.session_id in unchecked and not h.doc.of_live_record(alive_records)
    }
    return alive_sessions, gone


def search_passages(
    query: str,
    *,
    embedder: Embedder,
    index: LongTermIndex,
    weights: RecallWeights,
    k: int,
    min_score: float,
) -> list[RankedPassage]:
    """Verified passages for `query`; below min_score nothing counts as relevant."""
    vector = embed_queries(embedder, [query])[0]
    fused = fuse(*index.hybrid_search(Search(PASSAGE_INDEX, vector, query, k * 4, None)), weights)
    ranked = sorted(fused.values(), key=lambda pair: -pair[1])
    return [RankedPassage(doc, score) for doc, score in ranked[:k] if score >= min_score]


NOTHING_REMEMBERED = "I could not find anything about that in our past conversations."
NOTHING_VERIFIED = (
    "I found nothing relevant in the verified documents, so I cannot answer that from them."
)


@dataclass
class Answer:
    text: str
    sources: list[Source]
    model: str
    # False when no model wrote it (services/conversation/chat.py keeps it out).
    remember: bool = True


def answer_from_past(
    question: str,
    sessions: Sequence[RankedSession],
    *,
    generator: TextGenerator,
    max_new_tokens: int,
    token_budget: int,
) -> Answer:
    """One model call over the retrieved sessions; their dates are cited as sources."""
    if not sessions:
        return Answer(NOTHING_REMEMBERED, [], "none", remember=False)
    blocks = [f"[{s.date[:10]}] " + "\n".join(s.texts) for s in sessions]
    sources = [
        Source(
            kind=SourceKind.SESSION,
            id=s.session_id,
            title=s.title,
            date=s.date,
            score=round(s.score, 4),
        )
        for s in sessions
    ]
    instruction = (
        "Answer the question using only these notes from past conversations with the user. "
        "If they do not contain the answer, say you do not remember."
    )
    prompt = _grounded_prompt(instruction, blocks, question, token_budget)
    return _answer(prompt, sources, generator, max_new_tokens)


def answer_from_verified(
    question: str,
    passages: Sequence[RankedPassage],
    *,
    generator: TextGenerator,
    max_new_tokens: int,
    token_budget: int,
) -> Answer:
    """One model call over verified passages, citing doc_id/passage_id; none → say so."""
    if not passages:
        return Answer(NOTHING_VERIFIED, [], "none", remember=False)
    blocks = [f"[{p.doc.doc_id}#{p.doc.passage_id}] {p.doc.text}" for p in passages]
    sources = [
        Source(
            kind=SourceKind.PASSAGE,
            id=f"{p.doc.doc_id}#{p.doc.passage_id}",
            title=p.doc.title,
            doc_id=p.doc.doc_id,
            passage_id=p.doc.passage_id,
            score=round(p.score, 4),
        )
        for p in passages
    ]
    instruction = (
        "Answer the question using only these verified passages and cite the passage ids in "
        "brackets. If they do not contain the answer, say so."
    )
    prompt = _grounded_prompt(instruction, blocks, question, token_budget)
    return _answer(prompt, sources, generator, max_new_tokens)


def _answer(
    prompt: str, sources: list[Source], generator: TextGenerator, max_new_tokens: int
) -> Answer:
    """The model's answer to a grounded prompt, citing `sources`."""
    generation = generator.generate(prompt, max_new_tokens=max_new_tokens)
    return Answer(
        generation.text.strip(), sources, generation.model or generator.name, generation.remember
    )


def _grounded_prompt(instruction: str, blocks: list[str], question: str, budget: int) -> str:
    # A long question keeps its start and end within half of what the instruction leaves, so
    # the notes or passages it is to be answered from still fit.
    room = (budget - estimate_tokens(instruction)) // 2 - estimate_tokens("Question: \nAnswer:")
    question = clip_middle(question, max(room, budget // 4))
    tail = f"Question: {question}\nAnswer:"
    left = budget - estimate_tokens(instruction) - estimate_tokens(tail)
    kept: list[str] = []
    for block in blocks:
        if left <= 20:
            break
        clipped = clip_to_tokens(block, left)
        kept.append(clipped)
        left -= estimate_tokens(clipped)
    return "\n".join([instruction, *kept, tail])


def search_memories(
    memory: UserRecords,
    embedder: Embedder | None,
    index: LongTermIndex | None,
    *,
    user_id: str,
    query: str,
    k: int,
    weights: RecallWeights,
    now: datetime,
) -> list[RankedSession]:
    """GET /memories: the caller's past sessions that match `query`, best first."""
    if index is None or embedder is None:
        raise LongTermMemoryUnavailable("no long-term memory is configured")
    owner = owner_of(memory, user_id)
    return search_sessions(
        query,
        user_id=owner,
        embedder=embedder,
        index=index,
        weights=weights,
        now=now,
        k=k,
        live=lambda sessions, records: memory.live(owner, sessions, records),
    )
