"""Extracting durable facts and preferences from a session (services/extract.py): the offline
pattern extractor, and the model extractor's prompt and parser against recorded answers (real
SmolLM2-135M answers, all malformed, and hand-written well-formed ones: see
tests/unit/recorded/extract/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatmemory.domain import Turn
from chatmemory.schema import Intent, RecordType
from chatmemory.services.extract import (
    EXTRACT_INSTRUCTION,
    ModelExtractor,
    PatternExtractor,
    classify,
    parse_facts,
)
from chatmemory.services.summarize import SummaryBudget
from tests.fakes import FakeGenerator

RECORDED = Path(__file__).parent / "recorded" / "extract"
CONVERSATIONS = json.loads((RECORDED / "conversations.json").read_text())


def _turns(lines: list[list[object]], intent: Intent = Intent.CHAT) -> list[Turn]:
    return [Turn("s1", int(n), "alice", str(text), "ok", intent=intent) for n, text in lines]  # type: ignore[call-overload]


def _facts(name: str) -> dict[int, tuple[RecordType, str, str]]:
    found = PatternExtractor().extract(_turns(CONVERSATIONS[name]))
    return {f.turn: (f.type, f.subject, f.text) for f in found}


# --- offline: first-person statements -----------------------------------------------------------


def test_pattern_extractor_keeps_statements_about_the_user_with_their_subject() -> None:
    found = _facts("moved_for_work")
    assert found[2][:2] == (RecordType.FACT, "residence")
    assert found[3][:2] == (RecordType.FACT, "job")
    assert found[5][0] == RecordType.PREFERENCE  # "I prefer cycling"
    assert 1 not in found and 4 not in found  # a greeting and a question are not facts


def test_pattern_extractor_finds_likes_dislikes_and_favourites() -> None:
    found = _facts("food")
    assert found[1][:2] == (RecordType.FACT, "")  # vegetarian: a fact about nothing named
    assert found[2][:2] == (RecordType.PREFERENCE, "likes:mushrooms")  # a dislike, same key
    assert found[3][:2] == (RecordType.PREFERENCE, "likes:cuisine")
    assert 4 not in found


def test_small_talk_gives_no_facts() -> None:
    assert _facts("small_talk_only") == {}


def test_commands_are_not_statements() -> None:
    """/remember stored a record already; /past and /verified are questions."""
    turns = [
        Turn("s1", 1, "alice", "/remember I live in Porto now", "ok", intent=Intent.REMEMBER),
        Turn("s1", 2, "alice", "/past I moved to Lisbon in May?", "ok", intent=Intent.PAST),
    ]
    assert PatternExtractor().extract(turns) == []


def test_a_long_session_keeps_its_most_informative_statements_in_order() -> None:
    lines = [
        [n, f"I visited museum number {n} in the old town with my sister"] for n in range(1, 41)
    ]
    lines[10][1] = (
        "I visited the enormous maritime museum near the harbour with my sister and brother"
    )
    found = PatternExtractor(max_per_session=5).extract(_turns(lines))
    assert len(found) == 5
    assert 11 in [f.turn for f in found]
    assert [f.turn for f in found] == sorted(f.turn for f in found)


def test_classify_names_what_a_stated_record_is_about() -> None:
    assert classify("I live in Porto now") == (RecordType.FACT, "residence")
    assert classify("I love green tea") == (RecordType.PREFERENCE, "likes:green")
    assert classify("Biscuit is our greyhound") == (RecordType.FACT, "")


# --- with a model: the prompt and the parser ----------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_the_prompt_is_the_recorded_one(name: str) -> None:
    """The prompt the recorded answers replied to is what ModelExtractor sends today (else
    record again: the answers would not be evidence about this prompt)."""
    generator = FakeGenerator(context_tokens=2048, reply=lambda _: "")
    ModelExtractor(generator).extract(_turns(CONVERSATIONS[name]))
    assert generator.prompts == [(RECORDED / f"smollm2-{name}.prompt.txt").read_text()]


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_real_smollm2_answers_are_malformed_and_give_nothing(name: str) -> None:
    answer = (RECORDED / f"smollm2-{name}.answer.txt").read_text()
    turns = {int(n) for n, _ in CONVERSATIONS[name]}
    assert parse_facts(answer, turns) == []


def test_a_well_formed_answer_becomes_facts_with_their_turns() -> None:
    answer = (RECORDED / "written-moved_for_work.answer.txt").read_text()
    facts = ModelExtractor(FakeGenerator(context_tokens=2048, reply=lambda _: answer)).extract(
        _turns(CONVERSATIONS["moved_for_work"])
    )
    assert [(f.type, f.subject, f.turn) for f in facts] == [
        (RecordType.FACT, "residence", 2),
        (RecordType.FACT, "job", 3),
        (RecordType.FACT, "partner", 5),
        (RecordType.PREFERENCE, "likes:cycling", 5),  # "5" as a string is read as a turn
    ]
    assert facts[0].text == "The user moved from Lisbon to Porto last month for a new job."


def test_bad_lines_are_dropped_one_by_one() -> None:
    answer = (RECORDED / "written-broken.answer.txt").read_text()
    facts = parse_facts(answer, {2, 3})
    assert [(f.type, f.subject, f.text, f.turn) for f in facts] == [
        (RecordType.FACT, "residence", "The user lives in Porto.", 2),
        (RecordType.PREFERENCE, "likes:tea", "The user likes tea.", 3),
    ]


def test_long_texts_are_clipped() -> None:
    line = json.dumps({"type": "fact", "subject": "", "text": "x" * 1000, "turn": 1})
    assert len(parse_facts(line, {1})[0].text) == 300


def test_one_call_per_chunk_bounded_like_summaries() -> None:
    lines = [
        [n, f"I went to the market on day {n} and bought {'fresh ' * 30}bread"]
        for n in range(1, 200)
    ]
    generator = FakeGenerator(context_tokens=512, reply=lambda _: "")
    extractor = ModelExtractor(generator, budget=SummaryBudget(max_map_calls=3, concurrency=2))
    extractor.extract(_turns(lines))
    assert extractor.calls == len(generator.prompts) == 3
    assert all(p.startswith(EXTRACT_INSTRUCTION) for p in generator.prompts)


def test_a_session_without_user_statements_costs_no_call() -> None:
    generator = FakeGenerator(context_tokens=2048)
    extractor = ModelExtractor(generator)
    assert extractor.extract(_turns([[1, "/past where did I go?"]], Intent.PAST)) == []
    assert extractor.calls == 0
