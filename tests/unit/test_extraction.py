"""Extracting durable facts and preferences, and what a session left open, from a session
(services/profile/extract.py): the offline pattern extractor, and the model extractor's prompt and
parser against recorded answers (real SmolLM2-135M answers, all malformed, and hand-written
well-formed ones: see tests/unit/recorded/extract/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatmemory.domain import Turn
from chatmemory.schema import Intent, RecordType
from chatmemory.services.longterm.summarize import SummaryBudget
from chatmemory.services.profile.extract import (
    EXTRACT_INSTRUCTION,
    MAX_OPEN_PER_SESSION,
    ModelExtractor,
    PatternExtractor,
    classify,
    open_subject,
    parse_facts,
    settles,
)
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
    assert found[1][:2] == (RecordType.FACT, "diet")  # vegetarian: one diet, a newer replaces
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


def test_only_a_statement_of_the_one_value_of_a_subject_has_that_subject() -> None:
    """A newer record of the same subject replaces the older one (services/profile/placing):
    facts that only speak of the partner, a past home or who one lives with are held beside
    the others, not in place of them."""
    said = [
        "My wife is vegetarian.",
        "My wife and I go hiking every Sunday.",
        "I lived in Spain as a kid.",
        "I live with my parents.",
        "My job is mostly remote.",
    ]
    found = PatternExtractor().extract(_turns([[n, text] for n, text in enumerate(said, 1)]))
    assert [(f.turn, f.subject) for f in found] == [(n, "") for n in range(1, 6)]
    assert classify("My husband is called Raj") == (RecordType.FACT, "partner")
    assert classify("We moved from Lisbon to Porto") == (RecordType.FACT, "residence")
    assert classify("I work as a paramedic") == (RecordType.FACT, "job")


def test_a_message_that_leaves_out_its_i_is_split_as_if_it_said_it() -> None:
    found = PatternExtractor().statements("allergic to shellfish and don't eat red meat either")
    assert [f.text for f in found] == [
        "I'm allergic to shellfish.",
        "I don't eat red meat either.",
    ]


def test_a_message_of_fillers_only_has_no_fact() -> None:
    assert PatternExtractor().statements("Haha. OK! Honestly,") == []


class _MarksWords:
    """A judge that calls passing what holds one of its words."""

    def __init__(self, *words: str) -> None:
        self.words = words
        self.asked: list[list[str]] = []

    def passing(self, texts: list[str]) -> list[bool]:
        self.asked.append(list(texts))
        return [any(w in t for w in self.words) for t in texts]


def test_what_the_rules_keep_is_judged_again_and_what_the_judge_calls_passing_is_left_out() -> None:
    judge = _MarksWords("in-laws")
    lines = [[1, "We have the in-laws over until Sunday."], [2, "I'm a paramedic in Leeds."]]
    found = PatternExtractor(judge=judge).extract(_turns(lines))  # type: ignore[arg-type]
    assert [f.text for f in found] == ["I'm a paramedic in Leeds."]
    # The judge reads what the rules kept, once for the session.
    assert judge.asked == [["We have the in-laws over until Sunday.", "I'm a paramedic in Leeds."]]


def test_what_says_it_lasts_is_not_judged_again() -> None:
    judge = _MarksWords("quiz", "in-laws")
    lines = [
        [1, "Friday nights I'm at the pub quiz."],
        [2, "We have the in-laws over until Sunday."],
    ]
    found = PatternExtractor(judge=judge).extract(_turns(lines))  # type: ignore[arg-type]
    assert [f.text for f in found] == ["Friday nights I'm at the pub quiz."]
    assert judge.asked == [["We have the in-laws over until Sunday."]]


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


# --- open questions: what a session left unsettled ----------------------------------------------

OPEN = RecordType.OPEN_QUESTION


def _session(*exchanges: tuple[str, str | None]) -> list[Turn]:
    """The user's messages and the answers they got (None: no answer, the turn stayed pending)."""
    return [
        Turn("s1", n, "alice", said, answer, pending=answer is None)
        for n, (said, answer) in enumerate(exchanges, start=1)
    ]


def _open(turns: list[Turn]) -> list[tuple[int, str, str]]:
    return [
        (f.turn, f.text, f.subject) for f in PatternExtractor().extract(turns) if f.type == OPEN
    ]


def test_a_last_question_that_got_no_answer_is_left_open() -> None:
    turns = _session(
        ("We are going to Japan in the spring with the kids.", "How exciting!"),
        ("When should we book the flights to Japan?", None),
    )
    assert _open(turns) == [
        (2, "When should we book the flights to Japan?", "topic:book+flight+japan")
    ]


def test_an_answer_that_asks_back_leaves_the_question_open_until_the_user_replies() -> None:
    asked_back = ("Which hotel in Kyoto suits a family?", "Which dates are you travelling?")
    assert [t for t, _, _ in _open(_session(asked_back, ("ok, bye for now!", "Bye!")))] == [1]
    # The user answered the question back: the thread went on.
    assert _open(_session(asked_back, ("In April, for a week.", "Then the Granvia."))) == []
    # An answer that ends by offering more answered all the same.
    answered = ("Which hotel in Kyoto suits a family?", "The Granvia. Want more options?")
    assert _open(_session(answered)) == []


def test_a_deferred_answer_leaves_the_question_open_unless_the_user_comes_back_to_it() -> None:
    deferred = ("What time does the Kyoto railway museum open?", "I'm not sure, let me check.")
    assert [t for t, _, _ in _open(_session(deferred, ("Thanks anyway.", "You're welcome.")))] == [
        1
    ]
    back = ("So when does the railway museum open?", "At ten.")
    assert _open(_session(deferred, back)) == []


@pytest.mark.parametrize(
    "undecided",
    [
        "We haven't decided the date of the trip yet.",
        "I'm not sure yet whether we fly to Osaka or Tokyo.",
        "We still need to book the hotel in Kyoto.",
        "The date of the trip is still TBD.",
        "We'll see about the hotel in Kyoto.",
        "I can\u2019t decide between the ryokan and the hotel.",
    ],
)
def test_the_users_own_words_for_not_having_decided_leave_it_open_and_make_no_fact(
    undecided: str,
) -> None:
    turns = _session(("We are going to Japan in the spring with the kids.", "Lovely!"),
                     (undecided, "Sounds good."))  # fmt: skip
    found = PatternExtractor().extract(turns)
    assert [(f.type, f.turn) for f in found] == [(RecordType.FACT, 1), (OPEN, 2)]


def test_an_undecided_plan_taken_up_later_in_the_session_is_not_open() -> None:
    turns = _session(
        ("We haven't decided the date of the trip yet.", "Spring is lovely."),
        ("The trip will be in April then!", "Great choice."),
    )
    assert _open(turns) == []


def test_a_concluded_session_leaves_nothing_open() -> None:
    turns = _session(
        ("I work as a nurse at the children's hospital.", "That sounds rewarding."),
        ("Which shoes are best for long shifts on my feet?", "Cushioned clogs, for example."),
        ("Great, thanks a lot!", "You're welcome."),
    )
    assert _open(turns) == []
    for fact in _facts("moved_for_work"), _facts("career_change"):
        assert all(kind != OPEN for kind, _, _ in fact.values())


def test_open_questions_come_from_the_last_turns_and_a_few_at_most() -> None:
    early = ("I haven't decided which museum to visit in Kyoto.", "ok")
    assert _open(_session(early, *[("I like trains a lot.", "ok")] * 3)) == []  # not the end
    things = ["hotel Osaka", "flights Tokyo", "train pass", "rental car", "dinner Nara", "gift mum"]
    busy = [(f"We still need to book the {a}. We still need to book the {b}.", "ok")
            for a, b in zip(things[::2], things[1::2], strict=True)]  # fmt: skip
    found = _open(_session(*busy))
    assert len(found) == MAX_OPEN_PER_SESSION
    assert [t for t, _, _ in found] == [2, 3, 3]  # the latest
    # One line with too little content names nothing to pick up again.
    assert _open(_session(("Let me think about it.", "Sure."))) == []


def test_an_answer_that_is_no_models_tells_nothing_about_the_question() -> None:
    turns = _session(("Which hotel in Kyoto suits a family?", "Which dates? (offline)"))
    turns[0].remember_response = False
    assert _open(turns) == []


def test_an_open_question_is_about_a_named_subject_or_the_words_of_its_topic() -> None:
    assert open_subject("I'm not sure yet whether my job at the bank will last") == "job"
    assert open_subject("We haven't decided the date of the trip yet") == "topic:date+trip"
    assert open_subject("The trip was not settled.", "trip date") == "topic:date+trip"
    assert open_subject("Not settled.") == ""
    assert settles("The date of the trip is the 3rd of April", "", "topic:date+trip")
    assert settles("I work as a nurse", "job", "job")
    assert not settles("The trip to Japan was booked", "", "topic:date+trip")
    assert not settles("I work as a nurse", "job", "topic:date+trip")


def test_a_well_formed_answer_may_name_open_questions() -> None:
    answer = (RECORDED / "written-trip_undecided.answer.txt").read_text()
    generator = FakeGenerator(context_tokens=2048, reply=lambda _: answer)
    found = ModelExtractor(generator).extract(_turns(CONVERSATIONS["trip_undecided"]))
    assert [(f.type, f.subject, f.turn) for f in found] == [
        (RecordType.FACT, "", 1),
        (OPEN, "topic:date+trip", 2),  # the model's subject, made one a later fact can settle
        (OPEN, "job", 3),
    ]
    assert found[1].text == "The date of the trip to Japan was not settled (maybe April)."
    assert len(generator.prompts) == 1  # the same call as the facts


def test_bad_open_question_lines_are_dropped_one_by_one() -> None:
    answer = (RECORDED / "written-broken_open.answer.txt").read_text()
    assert [(f.type, f.subject, f.turn) for f in parse_facts(answer, {1, 2, 3, 4})] == [
        (OPEN, "topic:citi+dai+ten", 4),  # no subject: the words of its text
        (OPEN, "topic:date+trip", 2),  # a subject that is no string, a turn as a string
    ]


def test_with_a_model_the_questions_the_session_left_unanswered_are_open_too() -> None:
    """The model reads only the user's lines: whether an answer came is read from the turns."""
    turns = _session(
        ("We are going to Japan in the spring with the kids.", "How exciting!"),
        ("When should we book the flights to Japan?", None),
    )
    generator = FakeGenerator(context_tokens=2048, reply=lambda _: "")
    found = ModelExtractor(generator).extract(turns)
    assert [(f.type, f.turn) for f in found] == [(OPEN, 2)]
    assert generator.calls == 1
