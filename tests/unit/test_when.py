"""Time expressions in recall questions, and how /past favours sessions from that time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chatmemory.ports import Candidate, MemoryDoc
from chatmemory.services.longterm.recall import RecallWeights, rank_sessions
from chatmemory.services.longterm.when import time_window

NOW = datetime(2023, 9, 1, 12, tzinfo=UTC)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did Maria plan on the evening of 7 July, 2023?", _utc(2023, 7, 7), _utc(2023, 7, 8)),
        ("What painting did she show on October 13, 2023?", _utc(2023, 10, 13), _utc(2023, 10, 14)),
        ("what did we decide on 2022-03-04", _utc(2022, 3, 4), _utc(2022, 3, 5)),
        ("Which tournament did Nate win in November 2022?", _utc(2022, 11, 1), _utc(2022, 12, 1)),
        ("What happened in December?", _utc(2023, 12, 1), _utc(2024, 1, 1)),
        ("How many times did she go to the beach in 2023?", _utc(2023, 1, 1), _utc(2024, 1, 1)),
        ("what did I tell you yesterday", _utc(2023, 8, 31), _utc(2023, 9, 1)),
        ("the recipe from last week", _utc(2023, 8, 25), _utc(2023, 9, 1)),
    ],
)
def test_a_named_time_becomes_a_window(question: str, start: datetime, end: datetime) -> None:
    window = time_window(question, NOW)
    assert window is not None
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize(
    "question",
    ["May I ask what we discussed about the garden?", "what did we say at 3 pm", "my 2 cats"],
)
def test_questions_without_a_time_have_no_window(question: str) -> None:
    assert time_window(question, NOW) is None


def test_a_month_without_a_year_matches_that_month_of_any_year() -> None:
    window = time_window("When did Melanie go camping in June?", NOW)
    assert window is not None and window.any_year
    assert window.distance_days(_utc(2021, 6, 15)) == 0
    assert window.distance_days(_utc(2021, 8, 1)) == 31


def test_an_impossible_day_falls_back_to_its_month() -> None:
    window = time_window("what happened on 31 February, 2023", NOW)
    assert window is not None
    assert (window.start, window.end) == (_utc(2023, 2, 1), _utc(2023, 3, 1))


def _doc(key: str, session: str, date: str) -> MemoryDoc:
    return MemoryDoc(
        doc_key=key, user_id="u", kind="chunk", text=key, created_at=date, session_id=session
    )


def test_a_session_from_the_named_time_outranks_an_equally_similar_one() -> None:
    july = _doc("j", "JULY", "2023-07-07T18:00:00.000Z")
    august = _doc("a", "AUGUST", "2023-08-20T18:00:00.000Z")
    hits = [Candidate(august, vector_score=0.55), Candidate(july, vector_score=0.5)]
    weights = RecallWeights(recency=0.0, time=0.5, time_half_life_days=7)
    plain = rank_sessions(hits, [], weights=weights, now=NOW, k=2)
    assert [r.session_id for r in plain] == ["AUGUST", "JULY"]
    window = time_window("what did we plan on 7 July, 2023?", NOW)
    timed = rank_sessions(hits, [], weights=weights, now=NOW, k=2, window=window)
    assert [r.session_id for r in timed] == ["JULY", "AUGUST"]
    assert timed[0].score == pytest.approx(0.5 + 0.5)
