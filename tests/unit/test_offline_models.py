"""The offline models local mode runs on: responder, extractive summarizer, MiniLM embedder."""

from __future__ import annotations

import math

import pytest

from chatmemory.adapters.offline.responder import LABEL, OfflineResponder
from chatmemory.adapters.offline.summarizer import ExtractiveSummarizer
from chatmemory.domain import Turn
from chatmemory.services.prompt import Roles, build_chat_prompt, clean_output


def _prompt(history: list[str], message: str, profile: str = "") -> str:
    window = [Turn("s", i, "u", text, f"answer {i}") for i, text in enumerate(history, 1)]
    return build_chat_prompt(
        system="Be helpful.",
        summary="",
        window=window,
        message=message,
        roles=Roles(),
        token_budget=512,
        profile=profile,
    ).text


def test_offline_responder_is_labelled_and_shows_short_term_memory() -> None:
    reply = (
        OfflineResponder()
        .generate(
            _prompt(["my cat is called Tom", "I live in Porto"], "what is my cat called?"),
            max_new_tokens=100,
        )
        .text
    )
    cleaned = clean_output(reply, Roles())
    assert cleaned == reply and cleaned.startswith(LABEL)
    assert '"what is my cat called?"' in cleaned
    assert "2 earlier message(s)" in cleaned and '"I live in Porto"' in cleaned


def test_offline_responder_without_history_says_so() -> None:
    reply = OfflineResponder().generate(_prompt([], "hello"), max_new_tokens=50).text
    assert "no earlier messages" in reply


def test_offline_responder_counts_the_profile_in_plain_english() -> None:
    """Failed before: "(and 1 more things you told me)"."""
    from chatmemory.schema import PROMPT_PROFILE_FOOTER, PROMPT_PROFILE_HEADER

    def reply(facts: list[str], message: str) -> str:
        profile = "\n".join([PROMPT_PROFILE_HEADER, *(f"- {f}" for f in facts)])
        prompt = _prompt([], message, f"{profile}\n{PROMPT_PROFILE_FOOTER}")
        return OfflineResponder().generate(prompt, max_new_tokens=200).text

    four = ["I'm vegan.", "I'm Zed.", "I'm 41.", "I'm a carpenter in Galway."]
    assert "(and 1 more thing you told me)." in reply(four, "What should I cook tonight?")
    assert "(and 2 more things you told me)." in reply([*four, "I'm Irish."], "Dinner ideas?")
    assert "I keep 1 thing you told me about yourself in mind." in reply(["I'm vegan."], "hi")


def test_extractive_summary_keeps_informative_lines_with_speakers_in_order() -> None:
    transcript = "\n".join(
        [
            "User: Hi there!",
            "Assistant: Hello, how can I help?",
            "User: I am planning a trip to Lisbon in May with my sister Ana.",
            "Assistant: Lisbon in May is lovely; book the trip to Lisbon early.",
            "User: Ana wants to visit the Lisbon oceanarium during the trip.",
            "Assistant: Okay.",
        ]
    )
    summary = ExtractiveSummarizer(max_words=30).summarize(transcript)
    assert "Lisbon" in summary and summary.startswith("User:")
    assert "Okay." not in summary
    assert len(summary.split()) <= 30 + 6  # speaker labels are not counted
    assert summary == ExtractiveSummarizer(max_words=30).summarize(transcript)


def test_a_short_sessions_summary_keeps_its_decision_over_a_word_said_twice_in_one_line() -> None:
    """Failed before: "back to back" made "back" the one recurring word, so the summary was
    that line alone and the decision was left out."""
    transcript = (
        "User: Ugh, long night. Had three admissions back to back.\n"
        "User: I've decided to switch to day shifts from January."
    )
    assert "day shifts from January" in ExtractiveSummarizer().summarize(transcript)


@pytest.mark.slow
def test_minilm_embeddings_are_real_unit_vectors_that_capture_meaning() -> None:
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder

    cat, kitten, taxes = MiniLMEmbedder().embed(
        ["a cat sat on the mat", "a kitten was sitting on a rug", "quarterly tax filing deadline"]
    )
    assert len(cat) == 384
    assert math.isclose(sum(x * x for x in cat), 1.0, rel_tol=1e-4)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    assert dot(cat, kitten) > dot(cat, taxes) + 0.2


def test_offline_responder_answers_past_questions_from_the_retrieved_notes() -> None:
    from chatmemory.services.longterm.recall import RankedSession, answer_grounded, past_grounding

    session = RankedSession(
        "s1",
        1.0,
        1.0,
        1.0,
        "2026-05-01T10:00:00Z",
        "garden",
        texts=["User: my tomatoes have blight on the lower leaves"],
    )
    answer = answer_grounded(
        "what was wrong with my tomatoes?",
        past_grounding([session]),
        generator=OfflineResponder(),
        max_new_tokens=100,
        token_budget=512,
    )
    assert answer.text.startswith(LABEL)
    assert "tomatoes have blight" in answer.text and "You said" not in answer.text


def test_offline_past_answer_quotes_the_most_relevant_sentence_not_its_own_replies() -> None:
    from chatmemory.services.longterm.recall import RankedSession, answer_grounded, past_grounding

    garden = RankedSession(
        "s1",
        2.0,
        1.0,
        1.0,
        "2026-05-01T10:00:00Z",
        "garden",
        texts=[
            'User: Hello there.\nAssistant: [offline responder] You said: "my tomatoes".',
            "User: The tomatoes have blight. I also like tulips.",
            "User: The tomatoes  have blight.",  # the same sentence from another entry
        ],
    )
    trip = RankedSession(
        "s2", 1.0, 1.0, 1.0, "2026-04-01T10:00:00Z", "trip", texts=["User: I fly to Lisbon."]
    )
    answer = answer_grounded(
        "what was wrong with my tomatoes?",
        past_grounding([garden, trip]),
        generator=OfflineResponder(),
        max_new_tokens=100,
        token_budget=512,
    )
    assert answer.text.startswith(LABEL)
    assert "[2026-05-01] User: The tomatoes have blight." in answer.text
    assert answer.text.count("tomatoes") == 1
    assert "You said" not in answer.text and "Lisbon" not in answer.text


def _past_answer(question: str, texts: list[str], embedder: object | None) -> str:
    from chatmemory.services.longterm.recall import RankedSession, answer_grounded, past_grounding

    session = RankedSession("s1", 1.0, 1.0, 1.0, "2026-11-23T10:00:00Z", "dog", texts=texts)
    generator = OfflineResponder(None if embedder is None else lambda: embedder)  # type: ignore[arg-type,return-value]
    return answer_grounded(
        question,
        past_grounding([session]),
        generator=generator,
        max_new_tokens=100,
        token_budget=512,
    ).text


BISCUIT = [
    "User: We are adopting a rescue greyhound named Biscuit next month.",
    "User: I moved from Lisbon to Porto last month.",
]


def test_without_an_embedder_a_quote_needs_a_shared_word() -> None:
    """What local mode did before: "dog" is not "greyhound", so nothing was quoted."""
    answer = _past_answer("what was the name of the dog we adopt?", BISCUIT[:1], None)
    assert "Biscuit" not in answer


def test_with_an_embedder_the_responder_quotes_by_meaning() -> None:
    """A stand-in embedder for which a dog is a greyhound (MiniLM agrees: below)."""

    class Concepts:
        name, dimension, max_batch, pins_model = "concepts", 2, 16, False

        def embed(self, texts: list[str]) -> list[list[float]]:
            dog = ("dog", "greyhound")
            return [[1.0, 0.0] if any(w in t for w in dog) else [0.0, 1.0] for t in texts]

    answer = _past_answer("which dog?", BISCUIT, Concepts())
    assert "greyhound named Biscuit" in answer and "Lisbon" not in answer


@pytest.mark.slow
def test_minilm_finds_the_greyhound_when_asked_about_the_dog() -> None:
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder

    answer = _past_answer("what was the name of the dog we adopt?", BISCUIT, MiniLMEmbedder())
    assert "greyhound named Biscuit" in answer and "Lisbon" not in answer
