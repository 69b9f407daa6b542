"""Intent routing by prefix and by the optional classifier."""

from __future__ import annotations

import pytest

from chatmemory.errors import BadRequest
from chatmemory.services.conversation.routing import parse_prefix, route
from tests.fakes import FakeGenerator


@pytest.mark.parametrize(
    ("content", "intent", "text"),
    [
        ("/past where did I go?", "past", "where did I go?"),
        ("  /Verified   refund policy ", "verified", "refund policy"),
        ("/pasta recipe please", "chat", "/pasta recipe please"),
        ("tell me about /past things", "chat", "tell me about /past things"),
        ("/past\nmultiline question", "past", "multiline question"),
    ],
)
def test_prefix_routes_and_is_stripped(content: str, intent: str, text: str) -> None:
    routed = parse_prefix(content)
    assert (routed.intent, routed.text) == (intent, text)


def test_a_prefix_without_a_question_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        parse_prefix("/past   ")


def test_classifier_routes_unprefixed_messages_when_enabled() -> None:
    model = FakeGenerator(reply=lambda prompt: " past\nMessage: x")
    routed = route("what did we discuss last time?", generator=model)
    assert routed.intent == "past" and routed.routed_by == "classifier"
    assert routed.text == "what did we discuss last time?"
    assert model.prompts[0].endswith("Message: what did we discuss last time?\nLabel:")


def test_classifier_falls_back_to_chat_on_nonsense_or_failure() -> None:
    assert route("hello", generator=FakeGenerator(reply=lambda _: "banana")).intent == "chat"
    broken = FakeGenerator(fail_next=1)
    assert route("hello", generator=broken).intent == "chat"


def test_prefix_wins_over_the_classifier() -> None:
    model = FakeGenerator(reply=lambda _: "chat")
    assert route("/verified what is x", generator=model).intent == "verified"
    assert model.calls == 0
