"""BM25 over vector candidates (services/longterm/lexical.py), the lexical half of the ranking on a
store without full-text search: the words are analysed as the embedded index's FTS5 `porter
unicode61` tokenizer analyses them, and the scores follow BM25."""

from __future__ import annotations

import sqlite3

import pytest

from chatmemory.ports import Candidate, MemoryDoc
from chatmemory.services.longterm.lexical import bm25, document_terms, query_terms, rescore, stem

# Porter's own examples (his 1980 paper) and the two departures of his reference code.
PORTER = {
    "caresses": "caress",
    "ponies": "poni",
    "cats": "cat",
    "agreed": "agre",
    "plastered": "plaster",
    "motoring": "motor",
    "hopping": "hop",
    "falling": "fall",
    "filing": "file",
    "happy": "happi",
    "relational": "relat",
    "conditional": "condit",
    "digitizer": "digit",
    "generalizations": "gener",
    "oscillators": "oscil",
    "adjustable": "adjust",
    "electrical": "electr",
    "controll": "control",
    "conformabli": "conform",  # bli -> ble (departure), then able
    "analogousli": "analog",
    "at": "at",
}


@pytest.mark.parametrize(("word", "expected"), PORTER.items())
def test_stems_are_porters(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_words_are_analysed_as_the_embedded_index_analyses_them() -> None:
    text = (
        "Caroline's adopting a rescue greyhound named Biscuit; the résumés, e-mails and "
        "3.5 relational databases were generalizations of hopping_frogs."
    )
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'porter unicode61')")
    db.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    fts5 = [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]

    assert document_terms(text) == fts5


def test_a_query_keeps_its_distinct_content_words() -> None:
    assert query_terms("What did you say about the dogs, the dog and Biscuit?") == [
        "biscuit",
        "dog",
        "sai",
    ]
    assert query_terms("what did you say about the") == ["sai"]  # "say" is no stopword


def test_bm25_favours_rare_terms_and_short_documents() -> None:
    texts = [
        "greyhound greyhound walk",
        "a long walk on the beach with friends and family and more words",
        "walk",
        "nothing related",
    ]
    scores = bm25("greyhound walk", texts)

    assert scores[0] > scores[2] > scores[1] > scores[3] == 0.0


def test_rescore_returns_the_nearest_and_the_best_word_matches_among_them() -> None:
    def candidate(key: str, text: str, score: float) -> Candidate:
        doc = MemoryDoc(doc_key=key, user_id="u", kind="chunk", text=text, created_at="")
        return Candidate(doc, vector_score=score)

    found = [
        candidate("a", "the weather", 0.9),
        candidate("b", "Biscuit the greyhound", 0.8),
        candidate("c", "a greyhound", 0.7),
    ]

    vector, lexical = rescore(found, "greyhound Biscuit", 2)

    assert [c.doc.doc_key for c in vector] == ["a", "b"]
    assert [(c.doc.doc_key, c.vector_score) for c in lexical] == [("b", None), ("c", None)]
    assert lexical[0].lexical_score > lexical[1].lexical_score > 0
    assert rescore(found, "the", 2)[1] == []  # stopwords only: no word match
