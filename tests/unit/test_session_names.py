"""Sessions are named from what they are about (services/sessions.title_from), as chat apps name
conversations, once a message has something in it; a name the caller gave is kept."""

from __future__ import annotations

import pytest

from chatmemory.services.sessions import title_from


@pytest.mark.parametrize(
    ("message", "title"),
    [
        (
            "We are adopting a rescue greyhound named Biscuit next month.",
            "Adopting a rescue greyhound named Biscuit",
        ),
        ("Hi! Can you help me plan a trip to Lisbon in May?", "Plan a trip to Lisbon"),
        ("hello there. I'm moving to Porto for work", "Moving to Porto for work"),
    ],
)
def test_a_title_from_the_first_sentence_with_content(message: str, title: str) -> None:
    assert title_from(message) == title


@pytest.mark.parametrize("message", ["hi", "thanks!", "ok, bye for now", "/past my trip", ""])
def test_small_talk_and_commands_give_no_title(message: str) -> None:
    assert title_from(message) is None


def test_titles_are_short() -> None:
    title = title_from("Tell me everything about " + "very " * 40 + "long subjects")
    assert title is not None and len(title.split()) <= 6 and len(title) <= 60
