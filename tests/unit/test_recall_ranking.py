"""The ranking shared by every long-term index: fusion, per-session grouping, recency."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chatmemory.adapters.embedded import EmbeddedLongTermIndex
from chatmemory.ports import Candidate, MemoryDoc, Search
from chatmemory.schema import MEMORY_INDEX
from chatmemory.services.longterm.lexical import rescore
from chatmemory.services.longterm.recall import (
    RecallWeights,
    fuse,
    rank_sessions,
    recency_factor,
    search_sessions,
)
from chatmemory.services.longterm.when import time_window
from chatmemory.settings import Settings
from tests.fakes import FakeEmbedder

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def _doc(key: str, session: str, date: str = "2026-11-01T00:00:00.000Z") -> MemoryDoc:
    return MemoryDoc(
        doc_key=key, user_id="u", kind="chunk", text=key, created_at=date, session_id=session
    )


def test_vector_and_lexical_evidence_add_up_per_document() -> None:
    a, b = _doc("a1", "A"), _doc("b1", "B")
    ranked = rank_sessions(
        [Candidate(a, vector_score=0.6), Candidate(b, vector_score=0.7)],
        [Candidate(a, lexical_score=8.0), Candidate(b, lexical_score=2.0)],
        weights=RecallWeights(recency=0.0),
        now=NOW,
        k=5,
    )
    assert [r.session_id for r in ranked] == ["A", "B"]
    assert ranked[0].similarity == 0.6 + 1.0  # BM25 normalised by the query's best
    assert ranked[1].similarity == 0.7 + 0.25


def test_a_session_is_as_good_as_its_best_part() -> None:
    """Several fair matches in one session do not outrank one better match elsewhere (0.2 of
    the 2nd and 3rd best parts were added before: A came first with 0.7)."""
    hits = [Candidate(_doc(f"a{i}", "A"), vector_score=0.5) for i in range(4)]
    hits.append(Candidate(_doc("b1", "B"), vector_score=0.6))
    ranked = rank_sessions(hits, [], weights=RecallWeights(recency=0.0), now=NOW, k=2)
    assert [(r.session_id, r.similarity) for r in ranked] == [("B", 0.6), ("A", 0.5)]
    assert ranked[1].texts == ["a0", "a1", "a2"]  # /past's answer still reads its best three


def test_recency_breaks_ties_toward_the_newer_session() -> None:
    old = _doc("o", "OLD", "2025-11-22T00:00:00.000Z")
    new = _doc("n", "NEW", "2026-11-21T00:00:00.000Z")
    ranked = rank_sessions(
        [Candidate(old, vector_score=0.5), Candidate(new, vector_score=0.5)],
        [],
        weights=RecallWeights(recency=0.05),
        now=NOW,
        k=2,
    )
    assert [r.session_id for r in ranked] == ["NEW", "OLD"]
    assert recency_factor("2026-10-23T00:00:00Z", NOW, 30) == 0.5


def test_by_default_an_older_session_that_matches_better_comes_first() -> None:
    """Recency is off by default (it cost recall_all@5 on every LoCoMo conversation left out):
    a year's difference in age does not reorder two sessions 0.01 apart by similarity."""
    old = _doc("o", "OLD", "2025-11-22T00:00:00.000Z")
    new = _doc("n", "NEW", "2026-11-21T00:00:00.000Z")
    ranked = rank_sessions(
        [Candidate(old, vector_score=0.51), Candidate(new, vector_score=0.5)],
        [],
        weights=RecallWeights(),
        now=NOW,
        k=2,
    )
    assert [r.session_id for r in ranked] == ["OLD", "NEW"]


def test_a_session_from_the_time_the_question_names_outranks_a_closer_match_from_another() -> None:
    """The named time weighs 1.5 (chosen leaving one LoCoMo conversation out): a session of
    June is first for "in June" even when another matches the words and meaning far better."""
    june = _doc("j", "JUNE", "2026-06-10T00:00:00.000Z")
    march = _doc("m", "MARCH", "2026-03-10T00:00:00.000Z")
    ranked = rank_sessions(
        [Candidate(june, vector_score=0.3), Candidate(march, vector_score=0.6)],
        [Candidate(march, lexical_score=5.0), Candidate(june, lexical_score=1.0)],
        weights=RecallWeights(),
        now=NOW,
        k=2,
        window=time_window("what did we cook in June?", NOW),
    )
    assert [r.session_id for r in ranked] == ["JUNE", "MARCH"]


def test_weights_parse_from_configuration() -> None:
    assert RecallWeights.parse("2,0.5,0") == RecallWeights(2.0, 0.5, 0.0)
    assert RecallWeights.parse("2,0.5,0,0.1").time == 0.1
    assert RecallWeights.parse("") == RecallWeights()
    assert RecallWeights.parse(Settings().recall_weights) == RecallWeights()


# --- records never change how sessions rank (each is scored with its own corpus statistics) ---

_SESSIONS = {
    "s-boat": "We went sailing on the lake, sailing all day",
    "s-dog": "The dog ran along the harbour at dawn",
    "s-work": "A long meeting at work about budgets",
    "s-trip": "Our trip to the harbour town by train, then sailing",
}


def _entry(key: str, user: str, text: str, **fields: Any) -> MemoryDoc:
    [vector] = FakeEmbedder().embed([text])
    return MemoryDoc(
        doc_key=key,
        user_id=user,
        kind=fields.pop("kind", "chunk"),
        text=text,
        created_at="2026-11-01T00:00:00Z",
        embedding=vector,
        **fields,
    )


def _facts(user: str, count: int) -> list[MemoryDoc]:
    return [
        _entry(
            f"record#{user}#r{i}",
            user,
            f"I love sailing, sailing is my hobby number {i}",
            kind="fact",
            record_id=f"r{i}",
            sessions=["s-boat"],
        )
        for i in range(count)
    ]


def test_adding_records_to_a_fixed_world_leaves_the_past_ranking_of_sessions_unchanged() -> None:
    """Records shared BM25's statistics with the sessions' entries: thirty facts about sailing
    made "sailing" common, and /past put the dog's walk by the harbour above the sailing trip
    (s-dog, s-trip, s-boat before this was fixed). Scores must not move either."""
    index = EmbeddedLongTermIndex()
    index.upsert(
        MEMORY_INDEX,
        [_entry(f"{s}#chunk-1", "alice", text, session_id=s) for s, text in _SESSIONS.items()],
    )

    def ranking() -> list[tuple[str, float]]:
        found = search_sessions(
            "sailing near the harbour",
            user_id="alice",
            embedder=FakeEmbedder(),
            index=index,
            weights=RecallWeights(),
            now=NOW,
            k=4,
        )
        return [(r.session_id, r.score) for r in found]

    before = ranking()
    assert [s for s, _ in before][:2] == ["s-trip", "s-boat"]
    index.upsert(MEMORY_INDEX, _facts("alice", 30) + _facts("bob", 30))

    assert ranking() == before
    # The records are still there for auto-recall, which searches every memory.
    found = index.lexical_search(Search(MEMORY_INDEX, (), "sailing hobby", 50, "alice"))
    assert sum(1 for c in found if c.doc.kind == "fact") == 30


def test_word_scores_over_vector_candidates_keep_records_apart() -> None:
    """S3 Vectors scores words over its candidates: a session's entry scores the same whether
    records are among them or not (they are their own corpus, as their field on OpenSearch)."""
    sessions = [
        Candidate(_entry(f"{s}#chunk-1", "alice", t, session_id=s), vector_score=0.5)
        for s, t in _SESSIONS.items()
    ]
    records = [Candidate(f, vector_score=0.9) for f in _facts("alice", 10)]

    alone = {c.doc.doc_key: c.lexical_score for c in rescore(sessions, "sailing harbour", 20)[1]}
    mixed = rescore(records + sessions, "sailing harbour", 20)[1]

    assert {c.doc.doc_key: c.lexical_score for c in mixed if c.doc.session_id} == alone
    assert sum(1 for c in mixed if c.doc.record_id) == 10


def test_records_and_sessions_words_are_each_normalised_by_their_own_best() -> None:
    """Their BM25 come from two corpora, on two scales: GET /memories/records ranks both. One
    normalisation put the fact at 3/9 of the summary's words and below it (failed before)."""
    summary = _doc("s#summary", "S")
    fact = MemoryDoc(doc_key="f", user_id="u", kind="fact", text="f", created_at="", record_id="r")
    fused = fuse(
        [Candidate(summary, vector_score=0.5), Candidate(fact, vector_score=0.6)],
        [Candidate(summary, lexical_score=9.0), Candidate(fact, lexical_score=3.0)],
        RecallWeights(),
    )
    assert fused["s#summary"][1] == 0.5 + 1.0
    assert fused["f"][1] == 0.6 + 1.0
