"""Prompt building and output cleaning."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmemory.adapters.model_io import cut_at_stop
from chatmemory.domain import Turn
from chatmemory.ports import END, LENGTH, STOP_SEQUENCE, Finish, Piece
from chatmemory.services.prompt import (
    AntipromptFilter,
    Roles,
    build_chat_prompt,
    clean_output,
    clean_pieces,
    estimate_tokens,
)

# Examples of the property tests (more with CHATMEMORY_PROPERTY_EXAMPLES).
EXAMPLES = int(os.environ.get("CHATMEMORY_PROPERTY_EXAMPLES", "100"))


def _turns(n: int, words: int = 5) -> list[Turn]:
    return [
        Turn("s", i, "u", " ".join([f"q{i}"] * words), " ".join([f"a{i}"] * words))
        for i in range(1, n + 1)
    ]


def test_prompt_renders_summary_window_and_new_message_in_order() -> None:
    prompt = build_chat_prompt(
        system="Be brief.",
        summary="The user is planning a trip to Lisbon.",
        window=_turns(2, 1),
        message="Where should I eat?",
        roles=Roles(),
        token_budget=512,
    )
    assert prompt.text == (
        "Be brief.\n"
        "Summary of the earlier conversation: The user is planning a trip to Lisbon.\n"
        "User: q1\nAssistant: a1\nUser: q2\nAssistant: a2\n"
        "User: Where should I eat?\nAssistant:"
    )
    assert prompt.turns_used == 2


def test_prompt_drops_oldest_turns_to_fit_the_token_budget() -> None:
    window = _turns(30, words=20)
    prompt = build_chat_prompt(
        system="sys", summary="", window=window, message="newest", roles=Roles(), token_budget=300
    )
    assert estimate_tokens(prompt.text) <= 300
    assert 0 < prompt.turns_used < 30
    assert "q30" in prompt.text and "q1 " not in prompt.text
    assert prompt.text.endswith("User: newest\nAssistant:")


def test_an_oversized_summary_keeps_its_most_recent_end() -> None:
    summary = " ".join(f"w{i}" for i in range(2000))
    prompt = build_chat_prompt(
        system="", summary=summary, window=[], message="hi", roles=Roles(), token_budget=200
    )
    assert estimate_tokens(prompt.text) <= 200
    assert "w1999" in prompt.text and "w0 " not in prompt.text


def test_role_names_are_configurable() -> None:
    roles = Roles(user="Human", assistant="AI")
    prompt = build_chat_prompt(
        system="", summary="", window=_turns(1, 1), message="hey", roles=roles, token_budget=100
    )
    assert prompt.text == "Human: q1\nAI: a1\nHuman: hey\nAI:"
    assert clean_output("AI: hello\nHuman: more", roles) == "hello"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Assistant: Sure, Lisbon is lovely.", "Sure, Lisbon is lovely."),
        ("  Assistant:Assistant: twice", "twice"),
        ("Fine.\nUser: and what about me?", "Fine."),
        ("Fine. User: trailing stop word", "Fine."),
        ("Answer.\nAssistant: I continue talking to myself", "Answer."),
        ("No stop word here", "No stop word here"),
        ("User:", ""),
    ],
)
def test_output_is_cleaned_of_echoed_roles_and_anti_prompts(raw: str, expected: str) -> None:
    assert clean_output(raw, Roles()) == expected


def test_anti_prompt_split_across_tokens_is_still_caught() -> None:
    tokens = ["Assist", "ant", ": The", " answer", " is 4.", "\nUs", "e", "r", ": next?"]
    assert clean_output(tokens, Roles()) == "The answer is 4."


def test_streaming_filter_holds_back_only_a_possible_stop_word() -> None:
    stream = AntipromptFilter(["User:"])
    assert stream.feed("Hello Us") == "Hello "
    assert stream.feed("ually fine") == "Usually fine"
    assert stream.feed(" U") == " "
    assert stream.feed("ser: bye") == ""
    assert stream.stopped and stream.feed("more") == ""
    assert stream.finish() == ""


def test_clipping_keeps_whole_lines_so_speakers_stay_apart() -> None:
    from chatmemory.services.prompt import clip_to_tokens

    text = "User: my tomatoes have blight\nAssistant: " + "very long answer " * 200
    clipped = clip_to_tokens(text, 40)
    first, second = clipped.split("\n")
    assert first == "User: my tomatoes have blight"
    assert second.startswith("Assistant: very long") and estimate_tokens(clipped) <= 40


# A 32,000-character message (the API's default limit), its request first and its question last.
LONG_MESSAGES = {
    "english": "Please read my notes. "
    + "The harvest was late this year. " * 998
    + "So, what is my cat's name?",
    "chinese": "请读我的笔记。" + "今年的收成来得很晚，" * 3198 + "那么，我的猫叫什么名字？",
    "unbroken": "Please decode this: "
    + "QUJDREVGR0hJSktMTU5PUA" * 1450
    + " What is my cat's name?",
}
# deploy mode's TGI refuses more than MAX_INPUT_TOKENS=3072: a prompt of at most 3,072 UTF-8
# bytes is within it for any tokenizer (a subword token covers at least one byte).
TGI_MAX_INPUT_TOKENS = 3072


@pytest.mark.parametrize("message", LONG_MESSAGES.values(), ids=LONG_MESSAGES.keys())
def test_a_long_message_is_clipped_to_the_budget_keeping_its_request_its_question_and_memory(
    message: str,
) -> None:
    prompt = build_chat_prompt(
        system="You are a helpful assistant.",
        summary="The user has a cat.",
        window=_turns(3),
        message=message,
        roles=Roles(),
        token_budget=512,
        memory="Things you remember: the user's cat is called Tom.",
    )
    assert len(prompt.text.encode()) <= TGI_MAX_INPUT_TOKENS
    assert prompt.text.startswith("You are a helpful assistant.\nThings you remember: the user")
    user_line = prompt.text.split("\nUser: ")[-1]
    assert user_line.startswith(message[:7]) and user_line.endswith(f"{message[-10:]}\nAssistant:")


@pytest.mark.parametrize("question", LONG_MESSAGES.values(), ids=LONG_MESSAGES.keys())
def test_a_long_verified_question_is_clipped_and_leaves_room_for_the_passages(
    question: str,
) -> None:
    from chatmemory.ports import MemoryDoc
    from chatmemory.services.longterm.recall import (
        RankedPassage,
        answer_grounded,
        verified_grounding,
    )
    from tests.fakes import FakeGenerator

    passage = MemoryDoc(
        "pets#p1", "*", "passage", "The cat is called Tom.", "", doc_id="pets", passage_id="p1"
    )
    generator = FakeGenerator(reply=lambda _: "Tom [pets#p1]")
    answer_grounded(
        question,
        verified_grounding([RankedPassage(passage, 1.0)]),
        generator=generator,
        max_new_tokens=64,
        token_budget=512,
    )
    (prompt,) = generator.prompts
    assert len(prompt.encode()) <= TGI_MAX_INPUT_TOKENS
    assert "[pets#p1] The cat is called Tom." in prompt
    assert f"Question: {question[:7]}" in prompt and prompt.endswith(f"{question[-10:]}\nAnswer:")


def test_the_token_estimate_counts_text_written_without_spaces() -> None:
    # ~1 token per CJK character, and an unbroken run is not one word.
    assert estimate_tokens("今年的收成来得很晚" * 100) >= 900
    assert estimate_tokens("QUJDREVGR0hJSktMTU5PUA" * 100) >= 2200 / 4
    assert estimate_tokens("The harvest was late this year.") == estimate_tokens(
        "The harvest was late this year!"
    )


def test_the_written_out_word_characters_are_exactly_those_below_u0800() -> None:
    """Every code point: the class written out (fast to compile) and the one it stands for."""
    import re

    from chatmemory.services.prompt import SPACED_WORD_CHARS

    written, meant = re.compile(f"[{SPACED_WORD_CHARS}]"), re.compile(r"[^\W\u0800-\U0010ffff]")
    differ = [
        hex(c) for c in range(0x110000) if bool(written.match(chr(c))) != bool(meant.match(chr(c)))
    ]
    assert differ == []


# --- the filters on an answer's pieces ----------------------------------------------------------
# A streamed answer's text arrives in pieces split anywhere: a stop word or a role prefix split
# across pieces must be caught as in the whole text, and nothing shown may be taken back.

PIECE_TEXTS = [
    "Assistant: Sure, Lisbon is lovely.\nUser: and me?",
    "  Assistant:Assistant: twice  \n",
    "Fine. User: trailing stop word",
    "Answer.\nAssistant: I continue talking to myself",
    "Use the Assistant: rarely. Agent: here",
    "AssistAssistant: almost a prefix",
    "UsUser: overlap",
    "  spaced   out  \n\n",
    "User:",
    "A",
]


def _streamed(pieces: list[str], clean: Callable[[list[Piece]], Iterator[Piece]]) -> list[str]:
    """The text `clean` yields for `pieces` (then a Finish), delta by delta, checking that
    the deltas shown so far are always the start of the final answer."""
    shown = [p for p in clean([*pieces, Finish()]) if isinstance(p, str)]
    final = "".join(shown)
    so_far = ""
    for delta in shown:
        so_far += delta
        assert final.startswith(so_far)
    return shown


def _splits(text: str, cuts: int) -> Iterator[list[str]]:
    """`text` cut into pieces at every choice of `cuts` positions."""
    for points in itertools.combinations(range(1, len(text)), cuts):
        bounds = [0, *points, len(text)]
        yield [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("text", PIECE_TEXTS)
def test_a_reply_cleaned_piece_by_piece_is_the_whole_reply_cleaned_wherever_it_is_split(
    text: str,
) -> None:
    roles = Roles()
    expected = clean_output(text, roles)
    for cuts in (1, 2):
        for pieces in _splits(text, cuts):
            shown = _streamed(pieces, lambda p: clean_pieces(p, roles))
            assert "".join(shown) == expected, pieces


@pytest.mark.parametrize("text", PIECE_TEXTS)
def test_an_answer_cut_at_its_stop_words_piece_by_piece_never_shows_one(text: str) -> None:
    stops = ["User:", "Agent:"]
    whole = AntipromptFilter(stops)
    expected = (whole.feed(text) + whole.finish()).strip()
    for cuts in (1, 2):
        for pieces in _splits(text, cuts):
            shown = "".join(_streamed(pieces, lambda p: cut_at_stop(p, stops)))
            assert shown == expected, pieces
            assert not any(stop in shown for stop in stops)


def test_the_finish_says_the_answer_met_a_stop_word_and_keeps_its_usage() -> None:
    pieces = ["Fine.\nUs", "er: more", Finish(END, "m", 12, 5)]
    *text, finish = clean_pieces(pieces, Roles())
    assert text == ["Fine."]
    assert finish == Finish(STOP_SEQUENCE, "m", 12, 5)
    *_, untouched = clean_pieces(["Fine.", Finish(LENGTH, "m")], Roles())
    assert untouched.stop_reason == LENGTH


_FRAGMENTS = st.sampled_from(["User:", "Us", "er:", "Assistant:", "Assis", ":", " ", "\n", "ok"])


@given(
    parts=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=6)), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_any_split_of_any_reply_is_cleaned_as_the_whole(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    roles = Roles()
    assert "".join(_streamed(pieces, lambda p: clean_pieces(p, roles))) == clean_output(text, roles)


def test_a_reader_that_stops_early_lets_the_answer_go_at_once() -> None:
    released = []

    def answer() -> Iterator[Piece]:
        try:
            yield "Hello"
            yield " there"
            yield Finish()
        finally:
            released.append(True)

    upstream = answer()  # held, as an adapter's stream is held by its connection
    pieces = clean_pieces(upstream, Roles())
    assert next(pieces) == "Hello"
    pieces.close()
    assert released == [True]


def test_the_constant_start_of_a_chat_prompt_is_the_system_line_and_the_profile() -> None:
    """What a model that caches prompts may cache: the same from turn to turn, whatever the
    note, the recalled memory, the window and the message are."""
    from chatmemory.schema import PROMPT_PROFILE_FOOTER, PROMPT_PROFILE_HEADER

    profile = f"{PROMPT_PROFILE_HEADER}\n- I'm vegan.\n{PROMPT_PROFILE_FOOTER}"
    prompts = [
        build_chat_prompt(
            system="Be kind.",
            summary="",
            window=[],
            message=message,
            roles=Roles(),
            token_budget=512,
            memory=memory,
            note=note,
            profile=profile,
        )
        for message, memory, note in [
            ("hi", "", ""),
            ("what now?", "From earlier:\n[2026] x", "It has been 3 days."),
        ]
    ]
    for prompt in prompts:
        assert prompt.text[: prompt.constant_prefix] == f"Be kind.\n{profile}"
    without = build_chat_prompt(
        system="Be kind.", summary="", window=[], message="hi", roles=Roles(), token_budget=512
    )
    assert without.text[: without.constant_prefix] == "Be kind."
