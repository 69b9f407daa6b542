"""Prompt building and output cleaning."""

from __future__ import annotations

import pytest

from chatmemory.domain import Turn
from chatmemory.services.prompt import (
    AntipromptFilter,
    Roles,
    build_chat_prompt,
    clean_output,
    estimate_tokens,
)


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
