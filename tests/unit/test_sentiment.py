"""The sentiment of user turns: VADER offline (labels, scores, cost on long messages), the text
model's prompt and parser against recorded answers (real SmolLM2-135M ones, malformed included:
see tests/unit/recorded/sentiment/README.md), and a turn carrying it through chat, store-only
turns, GET /messages, the table's item and an export imported back; an analyzer that fails
leaves the turn without one, never fails it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from chatmemory.adapters.dynamodb.codec import turn_from_item, turn_to_item
from chatmemory.adapters.offline.sentiment import (
    PIECE_WORDS,
    VaderSentimentAnalyzer,
    _analyzer,
    pieces,
)
from chatmemory.domain import Sentiment, Turn
from chatmemory.errors import ConfigurationError
from chatmemory.schema import SentimentLabel
from chatmemory.services.conversation.chat import ChatDeps, ChatPolicy, Message, post_message
from chatmemory.services.conversation.sentiment import (
    SENTIMENT_INSTRUCTION,
    ModelSentimentAnalyzer,
    analyze_input,
    label_of,
    parse_sentiment,
    sentiment_of_score,
    sentiment_prompt,
)
from chatmemory.services.conversation.sessions import create_session
from chatmemory.services.conversation.turns import ClientTurn, TurnWriting, store_turn
from chatmemory.settings import Settings
from tests.fakes import FakeGenerator
from tests.memory_fake import InMemoryShortTermMemory
from tests.records_helpers import World, chat_world

RECORDED = Path(__file__).parent / "recorded" / "sentiment"
MESSAGES: dict[str, str] = json.loads((RECORDED / "messages.json").read_text())
POSITIVE, NEGATIVE, NEUTRAL = (
    SentimentLabel.POSITIVE,
    SentimentLabel.NEGATIVE,
    SentimentLabel.NEUTRAL,
)
ANGRY = "This is the third time my order is late and nobody answers. I am furious!"


@pytest.fixture(scope="module")
def vader() -> VaderSentimentAnalyzer:
    return VaderSentimentAnalyzer()


# --- offline: VADER ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        (ANGRY, NEGATIVE),
        ("I'm not happy with the replacement either, it broke after two days.", NEGATIVE),
        ("This is useless, worst support ever :(", NEGATIVE),
        ("Thank you so much, that fixed it! You've been really helpful.", POSITIVE),
        ("Great, the new card works perfectly 😀", POSITIVE),
        ("Hi, how are you today?", NEUTRAL),
        ("What are the opening hours of the Porto store on Saturdays?", NEUTRAL),
        ("Can I change the delivery address?", NEUTRAL),
    ],
)
def test_vader_labels_clear_messages_and_small_talk(
    vader: VaderSentimentAnalyzer, text: str, label: SentimentLabel
) -> None:
    assert vader.analyze(text).label == label


def test_scores_lie_in_minus_one_to_one_and_agree_with_their_labels(
    vader: VaderSentimentAnalyzer,
) -> None:
    texts = [*MESSAGES.values(), ANGRY, "", "!!!", "HATE HATE HATE!!!", "love " * 300, "ok"]
    for text in texts:
        found = vader.analyze(text)
        assert -1.0 <= found.score <= 1.0
        assert found.label == label_of(found.score)
        assert found.score == round(found.score, 4)


def test_labels_follow_vaders_thresholds() -> None:
    assert label_of(0.05) == POSITIVE and label_of(0.0499) == NEUTRAL
    assert label_of(-0.05) == NEGATIVE and label_of(-0.0499) == NEUTRAL


def test_a_long_message_is_scored_by_pieces_and_stays_cheap(
    vader: VaderSentimentAnalyzer,
) -> None:
    """VADER's time grows with the square of the words: 4,000 emoji took 4 s whole."""
    short = "The delivery was quick but the box was damaged 😞"
    whole = round(_analyzer().polarity_scores(short)["compound"], 4)
    assert vader.analyze(short).score == whole < 0  # whole, as VADER scores it
    assert all(len(p.split()) <= PIECE_WORDS for p in pieces("word " * 1000 + ". end"))
    for text in ("😂" * 4000, "a bad " * 666, "I am so angry!!! " * 235):
        started = time.perf_counter()
        found = vader.analyze(text)
        assert time.perf_counter() - started < 0.5
        assert found.label != NEUTRAL


# --- questions about something negative, on a labelled set ------------------------------------

LABELLED = Path(__file__).parent / "labelled" / "chat_sentiment.tsv"
# (split, label, text): see the file's header for how they were labelled.
MESSAGES_LABELLED = [
    tuple(line.split("\t"))
    for line in LABELLED.read_text().splitlines()
    if line and not line.startswith("#")
]


def _labels(analyze: Any, split: str) -> list[tuple[str, str, str]]:
    """(expected, found, text) for the split's messages; "unscored" when there is no sentiment."""
    rows = []
    for where, label, text in MESSAGES_LABELLED:
        if where == split:
            found = analyze(text)
            rows.append((label, "unscored" if found is None else found.label.value, text))
    return rows


def _accuracy(rows: list[tuple[str, str, str]]) -> float:
    return sum(expected == found for expected, found, _ in rows) / len(rows)


def _vader_alone(text: str) -> Sentiment:
    """What a message got before issue 44: VADER's compound score of what followed a command's
    prefix, every message scored."""
    from chatmemory.services.conversation.routing import parse_prefix

    plain = parse_prefix(text).text
    return sentiment_of_score(float(_analyzer().polarity_scores(plain)["compound"]))


def test_the_labelled_set_is_varied_and_each_split_holds_every_label() -> None:
    assert len(MESSAGES_LABELLED) >= 170
    for split in ("dev", "held-out"):
        labels = [label for where, label, _ in MESSAGES_LABELLED if where == split]
        assert {"positive", "negative", "neutral", "unscored"} <= set(labels)
    texts = [text for _, _, text in MESSAGES_LABELLED]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize(("split", "floor"), [("dev", 0.82), ("held-out", 0.75)])
def test_questions_about_something_negative_are_neutral_and_commands_unscored(
    vader: VaderSentimentAnalyzer, split: str, floor: float
) -> None:
    """On hand-labelled chat messages (tests/unit/labelled/chat_sentiment.tsv; printed by
    `pytest tests/unit/test_sentiment.py -k labelled -s`): before, VADER alone agreed with 65 of
    the 109 dev messages (59.6%; 65 of the 103 that are no command) and 35 of the 69 held-out
    ones (50.7%; 35 of 66); with commands unscored and questions about something negative
    neutral, 90 of 109 (82.6%; 84 of 103) and 52 of 69 (75.4%; 49 of 66). The rule was chosen
    looking at the dev messages only."""
    now = _labels(lambda text: analyze_input(vader, text)[0], split)
    before = _labels(_vader_alone, split)
    print(f"\n{split}: {_accuracy(before):.3f} before, {_accuracy(now):.3f} now ({len(now)})")
    assert _accuracy(now) >= floor > _accuracy(before) + 0.15
    # Every command unscored; the two examples (in the set) neutral or unscored.
    assert all(found == "unscored" for expected, found, _ in now if expected == "unscored")
    found = {text: label for _, label, text in now}
    if split == "dev":
        assert found["What should I avoid cooking for myself?"] == "neutral"
        assert found["/remember I am allergic to peanuts"] == "unscored"


@pytest.mark.parametrize(
    "text",
    [
        "What is wrong with you?",  # said of the one addressed
        "Who designed this awful menu?",  # of the thing at hand
        "Why is it ALWAYS broken when I need it?",  # shouted
        "Why is the support so terrible?",  # a booster before it
        "How do I fix this error?!",  # an exclamation mark
        "How do I fix the login error? :(",  # a negative emoticon
        "I lost my keys. Where should I look?",  # the bad news is a statement
        "Useless thing, how do I turn it off?",  # before the question: no topic of it
        "WTF?",  # asks nothing
    ],
)
def test_a_question_that_complains_keeps_its_negative_label(
    vader: VaderSentimentAnalyzer, text: str
) -> None:
    assert vader.analyze(text).label == NEGATIVE


@pytest.mark.parametrize(
    "text",
    [
        "what should I avoid before a blood test",  # typed without a question mark
        "I have a peanut allergy. Which snacks should I avoid?",
        "Is it dangerous to mix bleach and vinegar?",
        "How do I fix the login error?",
        "What's the penalty for paying late?",  # a contracted question word
        "Doesn't ibuprofen have side effects I should worry about?",  # a negated one
    ],
)
def test_a_question_about_something_negative_is_neutral(
    vader: VaderSentimentAnalyzer, text: str
) -> None:
    assert vader.analyze(text) == Sentiment(NEUTRAL, 0.0)
    assert _analyzer().polarity_scores(text)["compound"] < -0.05  # VADER alone: negative


def test_vader_here_reads_vaders_own_tables_and_scores_as_vader() -> None:
    """The lexicon is split in one pass and the emoji table read only for a text that is not
    all ASCII (a chat cold start's largest cost, halved): the same tables and scores as the
    package's own analyzer, on the labelled set and on emoji."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    own = SentimentIntensityAnalyzer()
    fresh = _analyzer.__wrapped__()
    assert fresh.lexicon == own.lexicon
    assert not any(emoji.isascii() for emoji in own.emojis)  # an ASCII text holds none
    ascii_texts = [text for _, _, text in MESSAGES_LABELLED if text.isascii()]
    for text in ascii_texts:
        assert fresh.polarity_scores(text) == own.polarity_scores(text)
    assert fresh.emojis == {}  # not read for them
    emoji_texts = ["great news 😂", "so sad 😞 :(", "ok 👍🏽 thanks", "✝ café", "😂" * 30]
    for text in emoji_texts + [text for _, _, text in MESSAGES_LABELLED]:
        assert fresh.polarity_scores(text) == own.polarity_scores(text)
    assert fresh.emojis == own.emojis


# --- with the text model: the prompt and the parser --------------------------------------------


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_the_prompt_is_the_recorded_one(name: str) -> None:
    """The prompt the recorded answers replied to is what ModelSentimentAnalyzer sends today
    (else record again: the answers would say nothing about this prompt)."""
    generator = FakeGenerator(reply=lambda _: "neutral")
    ModelSentimentAnalyzer(generator, fallback=VaderSentimentAnalyzer()).analyze(MESSAGES[name])
    assert generator.prompts == [(RECORDED / f"smollm2-{name}.prompt.txt").read_text()]
    assert generator.prompts[0].startswith(SENTIMENT_INSTRUCTION)


# What SmolLM2-135M answered, as the parser reads it: None is malformed (VADER answers then).
SMOLLM2 = {
    "angry_complaint": Sentiment(NEGATIVE, -0.5),  # "The sentiment of this message is negative."
    "thanks": Sentiment(POSITIVE, 0.5),  # "Positive"
    "question": Sentiment(NEGATIVE, -0.5),  # well-formed, and wrong
    "disappointed": Sentiment(NEUTRAL, 0.0),  # well-formed, and wrong
    "small_talk": None,  # "... is positive, with a" (cut off at the token limit)
    "mixed": None,  # the message echoed back
}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_real_smollm2_answers_parse_or_are_refused(name: str) -> None:
    answer = (RECORDED / f"smollm2-{name}.answer.txt").read_text()
    assert parse_sentiment(answer) == SMOLLM2[name]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("negative 0.8", Sentiment(NEGATIVE, -0.8)),
        ("Negative -0.7", Sentiment(NEGATIVE, -0.7)),  # the sign comes from the label
        ("Positive, 0.9.", Sentiment(POSITIVE, 0.9)),
        ("Sentiment: positive (strength 0.35)", Sentiment(POSITIVE, 0.35)),
        ("```\nnegative 0.6\n```", Sentiment(NEGATIVE, -0.6)),
        ("neutral 0.4", Sentiment(NEUTRAL, 0.0)),
        ("positive 0", Sentiment(POSITIVE, 0.05)),  # still positive
        ("**NEGATIVE**", Sentiment(NEGATIVE, -0.5)),
        ("positive 8", None),  # another scale
        ("80%", None),
        ("positive or negative", None),
        ("not negative", None),
        ("negative 0.9 because the user is angry", None),
        ("I cannot tell.", None),
        ("", None),
    ],
)
def test_the_parser_takes_one_label_and_a_strength_and_nothing_else(
    answer: str, expected: Sentiment | None
) -> None:
    assert parse_sentiment(answer) == expected


def test_a_malformed_answer_or_a_failed_model_falls_back_to_vader() -> None:
    vader = VaderSentimentAnalyzer()
    echo = FakeGenerator(reply=lambda _: (RECORDED / "smollm2-mixed.answer.txt").read_text())
    model = ModelSentimentAnalyzer(echo, fallback=vader)
    assert model.analyze(ANGRY) == vader.analyze(ANGRY) and model.fallbacks == 1
    down = FakeGenerator(fail_next=1)
    model = ModelSentimentAnalyzer(down, fallback=vader)
    assert model.analyze(ANGRY).label == NEGATIVE and model.fallbacks == 1
    answered = ModelSentimentAnalyzer(FakeGenerator(reply=lambda _: "negative 0.9"), vader)
    assert answered.analyze("hello") == Sentiment(NEGATIVE, -0.9)
    assert answered.name == "model:fake-llm"


def test_the_model_sees_a_bounded_message() -> None:
    prompt = sentiment_prompt("I waited so long " * 2000)
    assert len(prompt) < 2500 and prompt.endswith("\nSentiment:")


# --- configuration -----------------------------------------------------------------------------


def test_sentiment_costs_no_model_call_unless_asked_and_model_needs_a_text_model() -> None:
    """Failed before: with a text model, `auto` asked it for every turn's sentiment, a second
    model call a turn (twice the requests against the model's quota)."""
    from chatmemory.services.conversation.sentiment import ModelSentimentAnalyzer
    from chatmemory.wiring import sentiment_analyzers

    assert Settings.from_env({}).sentiment == "auto"
    offline, _ = sentiment_analyzers(Settings.from_env({}), FakeGenerator())
    assert offline is not None and offline.name == "vader"
    model = FakeGenerator()
    chat, stored = sentiment_analyzers(Settings.from_env({"TEXT_BACKEND": "bedrock"}), model)
    assert chat is not None and chat.name == "vader" and stored is chat
    chat.analyze("This is awful, nothing works.")
    assert model.prompts == []  # no model call for a turn's sentiment
    asked, stored = sentiment_analyzers(
        Settings.from_env({"TEXT_BACKEND": "bedrock", "SENTIMENT": "model"}), FakeGenerator()
    )
    assert isinstance(asked, ModelSentimentAnalyzer) and stored is not None
    assert stored.name == "vader"  # POST /turns calls no model
    chosen, _ = sentiment_analyzers(
        Settings.from_env({"TEXT_BACKEND": "bedrock", "SENTIMENT": "vader"}), FakeGenerator()
    )
    assert chosen is not None and chosen.name == "vader"
    assert Settings.from_env({"SENTIMENT": "off"}).sentiment == "off"
    assert Settings.from_env({"TEXT_BACKEND": "bedrock", "SENTIMENT": "model"}).sentiment == (
        "model"
    )
    with pytest.raises(ConfigurationError, match="SENTIMENT='model'.*needs a text model"):
        Settings.from_env({"SENTIMENT": "model"})
    with pytest.raises(ConfigurationError, match="SENTIMENT='happy'"):
        Settings.from_env({"SENTIMENT": "happy"})


def test_stored_turns_never_ask_the_model_for_their_sentiment() -> None:
    from chatmemory.wiring import sentiment_analyzers

    generator = FakeGenerator()
    chat, stored = sentiment_analyzers(
        Settings(text_backend="bedrock", sentiment="model"), generator
    )
    assert isinstance(chat, ModelSentimentAnalyzer) and isinstance(stored, VaderSentimentAnalyzer)
    assert sentiment_analyzers(Settings(sentiment="off"), generator) == (None, None)
    chat, stored = sentiment_analyzers(Settings(), generator)
    assert isinstance(chat, VaderSentimentAnalyzer) and stored is chat


# --- a turn carries it -------------------------------------------------------------------------


class Broken:
    name = "broken"

    def analyze(self, text: str) -> Sentiment:
        raise RuntimeError("lexicon missing")


def _chat(analyzer: Any, generator: FakeGenerator | None = None) -> tuple[ChatDeps, str]:
    memory = InMemoryShortTermMemory()
    deps = ChatDeps(memory=memory, generator=generator or FakeGenerator(), sentiment=analyzer)
    return deps, create_session(memory, "alice").session_id


def _store(deps: ChatDeps, session_id: str, text: str, analyzer: Any) -> Any:
    """POST /turns's service: a turn stored as the client gives it, with an answer."""
    return store_turn(
        deps.memory,
        ClientTurn(text, "noted"),
        TurnWriting(deps.clock, lambda _: None),
        user_id="alice",
        session_id=session_id,
        max_input_chars=4000,
        sentiment=analyzer,
    )


def test_a_chat_turn_carries_the_sentiment_of_its_input(vader: VaderSentimentAnalyzer) -> None:
    deps, sid = _chat(vader)
    result = post_message(
        deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content=ANGRY)
    )
    assert result.turn.sentiment == Sentiment(NEGATIVE, -0.6114)
    stored = deps.memory.get_turn(sid, 1)
    assert stored is not None and stored.sentiment == result.turn.sentiment
    # A command asks the service for something: it is not scored (issue 44).
    for content in ("/past the happy trip", "/remember I am allergic to peanuts"):
        result = post_message(
            deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content=content)
        )
        assert result.turn.sentiment is None and result.sentiment_error == ""
        assert result.turn.response


def test_commands_are_not_scored_wherever_a_turn_is_stored(vader: VaderSentimentAnalyzer) -> None:
    """Failed before: "/remember I am allergic to peanuts" was labelled negative (VADER's
    "allergic" is -1.2), and counted toward the negative-sentiment hand-off."""
    from chatmemory.services.conversation.handoff import for_agent_turn

    assert analyze_input(vader, "/remember I am allergic to peanuts") == (None, "")
    assert analyze_input(vader, "  /PAST what went wrong with my order?") == (None, "")
    assert analyze_input(vader, "/verified") == (None, "")  # bare: refused later, not scored
    assert analyze_input(vader, "/human this is useless") == (None, "")
    assert analyze_input(vader, "I am allergic to peanuts")[0] is not None  # not a command
    assert analyze_input(vader, "/pasta is great")[0] is not None  # not a command either
    deps, sid = _chat(vader)
    session = deps.memory.get_session(sid)
    assert session is not None
    turn, error = for_agent_turn(
        session,
        content="/remember I hate waiting",
        client_message_id=None,
        sentiment=vader,
        created_at="2026-01-01T00:00:00Z",
        expires_at=None,
    )
    assert turn.sentiment is None and error == ""
    stored = _store(deps, sid, "/remember I hate waiting", vader)
    assert stored.turn.sentiment is None


def test_a_turn_the_model_failed_keeps_its_sentiment(vader: VaderSentimentAnalyzer) -> None:
    from chatmemory.errors import ModelUnavailable

    deps, sid = _chat(vader, FakeGenerator(fail_next=1))
    with pytest.raises(ModelUnavailable):
        post_message(
            deps,
            ChatPolicy(),
            Message(user_id="alice", session_id=sid, content=ANGRY, client_message_id="m"),
        )
    pending = deps.memory.get_turn(sid, 1)
    assert pending is not None and pending.pending and pending.sentiment is not None
    retried = post_message(
        deps,
        ChatPolicy(),
        Message(user_id="alice", session_id=sid, content=ANGRY, client_message_id="m"),
    )
    assert not retried.turn.pending and retried.turn.sentiment == pending.sentiment


def test_an_analyzer_that_fails_leaves_the_turn_without_sentiment_and_says_why() -> None:
    deps, sid = _chat(Broken())
    result = post_message(
        deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content=ANGRY)
    )
    assert result.turn.response and result.turn.sentiment is None
    assert result.sentiment_error == "broken: RuntimeError: lexicon missing"
    stored = _store(deps, sid, ANGRY, Broken())
    assert stored.turn.turn == 2 and stored.turn.sentiment is None and stored.sentiment_error


def test_without_an_analyzer_turns_carry_none() -> None:
    deps, sid = _chat(None)
    result = post_message(
        deps, ChatPolicy(), Message(user_id="alice", session_id=sid, content=ANGRY)
    )
    assert result.turn.sentiment is None and result.sentiment_error == ""


def test_the_item_holds_the_sentiment_only_when_there_is_one() -> None:
    turn = Turn("s1", 1, "alice", ANGRY, "ok")
    assert "sentiment" not in turn_to_item(turn)
    turn.sentiment = Sentiment(NEGATIVE, -0.6114)
    item = turn_to_item(turn)
    assert item["sentiment"] == {"label": "negative", "score": -0.6114}
    from chatmemory.adapters.dynamodb.codec import serialize

    assert turn_from_item(serialize(item)).sentiment == turn.sentiment
    neutral = turn_to_item(Turn("s1", 2, "alice", "hi", "ok", sentiment=Sentiment(NEUTRAL, 0.0)))
    assert turn_from_item(serialize(neutral)).sentiment == Sentiment(NEUTRAL, 0.0)


# --- through the API (the chat Lambda on moto) -------------------------------------------------


@pytest.fixture
def world(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    world = chat_world(dynamodb, monkeypatch, lambda_context, long_term=False)
    world.deps.sentiment = world.deps.stored_sentiment = VaderSentimentAnalyzer()
    return world


def test_the_api_returns_lists_exports_and_imports_the_sentiment(world: World) -> None:
    sid = world.api.new_session()
    said = world.api.say(sid, ANGRY)
    assert said["sentiment"] == {"label": "negative", "score": -0.6114}
    status, stored = world.api.call(
        "POST", f"/sessions/{sid}/turns", {"input": "Thanks, that was really helpful!"}
    )
    assert status == 201 and stored["turn"]["sentiment"]["label"] == "positive"
    assert world.model.calls == 1  # a stored turn's sentiment asks no model
    listed = world.api.call("GET", f"/sessions/{sid}/messages")[1]["messages"]
    assert [m["sentiment"]["label"] for m in listed] == ["negative", "positive"]
    exported = world.api.call("GET", f"/sessions/{sid}/export")[1]
    assert [m["sentiment"] for m in exported["messages"]] == [m["sentiment"] for m in listed]
    # Imported back as exported (no analyzer runs on an import): an edited label is kept,
    # a message without one stays without.
    exported["messages"][1]["sentiment"] = {"label": "neutral", "score": 0.01}
    del exported["messages"][0]["sentiment"]
    status, imported = world.api.call("POST", "/sessions/import", exported)
    assert status == 201, imported
    again = world.api.call("GET", f"/sessions/{imported['session']['session_id']}/messages")[1]
    assert [m.get("sentiment") for m in again["messages"]] == [
        None,
        {"label": "neutral", "score": 0.01},
    ]


@pytest.mark.parametrize(
    "sentiment",
    [
        {"label": "furious", "score": -0.9},
        {"label": "negative", "score": -1.5},
        {"label": "negative", "score": "-0.5"},
        {"label": "negative"},
        {"label": "negative", "score": float("nan")},
        "negative",
    ],
)
def test_an_import_refuses_a_sentiment_out_of_bounds(world: World, sentiment: Any) -> None:
    document = {"messages": [{"input": "hello", "response": "hi", "sentiment": sentiment}]}
    raw = json.dumps(document)  # NaN as JSON's NaN: refused like any other
    status, answer = world.api.call("POST", "/sessions/import", raw=raw)
    assert status == 400, answer


def test_a_failing_analyzer_is_logged_and_the_turn_answered(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.deps.sentiment = world.deps.stored_sentiment = Broken()
    sid = world.api.new_session()
    said = world.api.say(sid, ANGRY)
    assert said["response"] and said["sentiment"] is None
    status, stored = world.api.call("POST", f"/sessions/{sid}/turns", {"input": ANGRY})
    assert status == 201 and stored["turn"]["sentiment"] is None
    logged = [r for r in caplog.records if r.getMessage() == "sentiment failed"]
    assert [getattr(r, "reason", "") for r in logged] == [
        "broken: RuntimeError: lexicon missing"
    ] * 2


def test_the_bench_reads_a_labelled_set_of_ones_own(tmp_path: Path) -> None:
    """bench.sentiment: `label<TAB>text`, `rating<TAB>text` and the ground truth's
    `id<TAB>rating<TAB>text` lines (ratings from -4 to 4, labelled as VADER labels scores)."""
    from bench.sentiment import gold_of_rating, run

    assert (gold_of_rating(0.2), gold_of_rating(0.19), gold_of_rating(-0.2)) == (
        POSITIVE,
        NEUTRAL,
        NEGATIVE,
    )
    data = tmp_path / "support.tsv"
    data.write_text(
        "label\ttext\n"  # a header is skipped
        f"negative\t{ANGRY}\n"
        "positive\tThank you so much, that fixed it!\n"
        "neutral\tCan I change the delivery address?\n"
        "-2.5\tThis is useless.\n"
        "7\t3.1\tLove it!\n"
        "positive\tMy parcel arrived.\n"  # VADER: neutral
    )
    result = run(data, ["amazon"])
    assert (result["n"], result["accuracy"], result["analyzer"]) == (6, round(5 / 6, 4), "vader")
    assert result["per_class"]["positive"] == {
        "precision": 1.0,
        "recall": 0.6667,
        "f1": 0.8,
        "n": 3,
    }
    assert result["confusion"]["positive->neutral"] == 1 and result["set"] == str(data)
