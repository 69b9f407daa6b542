"""The ranking shared by every long-term index: fusion, per-session grouping, recency."""

from __future__ import annotations

from datetime import UTC, datetime

from chatmemory.ports import Candidate, MemoryDoc
from chatmemory.services.recall import RecallWeights, rank_sessions, recency_factor
from chatmemory.settings import Settings

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


def test_a_session_is_scored_by_its_best_part_plus_a_share_of_the_next_two() -> None:
    hits = [Candidate(_doc(f"a{i}", "A"), vector_score=0.5) for i in range(4)]
    hits.append(Candidate(_doc("b1", "B"), vector_score=0.6))
    ranked = rank_sessions(hits, [], weights=RecallWeights(recency=0.0, support=0.2), now=NOW, k=2)
    assert ranked[0].session_id == "A"
    assert abs(ranked[0].similarity - (0.5 + 0.2 * 1.0)) < 1e-9


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


def test_weights_parse_from_configuration() -> None:
    assert RecallWeights.parse("2,0.5,0") == RecallWeights(2.0, 0.5, 0.0)
    assert RecallWeights.parse("2,0.5,0,0.1").time == 0.1
    assert RecallWeights.parse("") == RecallWeights()
    assert RecallWeights.parse(Settings().recall_weights) == RecallWeights()
