"""The sentiment of a user's message: a label and a score in [-1, 1], on every user turn.

The label follows VADER's documented convention for its compound score (Hutto & Gilbert 2014,
and the vaderSentiment README): at least +0.05 is positive, at most -0.05 negative, neutral
between. The offline analyzer is VADER itself (adapters/offline/sentiment.py). With
SENTIMENT=model the text model is asked instead, in one short call per chat turn
(ModelSentimentAnalyzer): its answer is one label and a strength, and anything else (or a
model that fails) falls back to VADER (tests/unit/recorded/sentiment holds real answers,
malformed ones included). A turn never fails for its sentiment: `analyze_input` turns an
analyzer's error into no sentiment and a reason for the handler to log.
"""

from __future__ import annotations

import math
import re
from functools import cache

from chatmemory.domain import Sentiment
from chatmemory.errors import ChatMemoryError
from chatmemory.ports import SentimentAnalyzer, TextGenerator
from chatmemory.schema import SentimentLabel
from chatmemory.services.prompt import clip_to_tokens

# VADER's thresholds on its compound score (and on any score in [-1, 1] here).
POSITIVE_THRESHOLD = 0.05
NEGATIVE_THRESHOLD = -0.05


def label_of(score: float) -> SentimentLabel:
    if score >= POSITIVE_THRESHOLD:
        return SentimentLabel.POSITIVE
    if score <= NEGATIVE_THRESHOLD:
        return SentimentLabel.NEGATIVE
    return SentimentLabel.NEUTRAL


def sentiment_of_score(score: float) -> Sentiment:
    """A score in [-1, 1] (clamped, 4 decimals: what a turn's item keeps) and its label."""
    if not math.isfinite(score):
        raise ValueError(f"a sentiment score must be finite, not {score}")
    score = round(max(-1.0, min(1.0, score)), 4)
    return Sentiment(label_of(score), score)


def analyze_input(analyzer: SentimentAnalyzer | None, text: str) -> tuple[Sentiment | None, str]:
    """The sentiment of a user's message, or None and the reason (logged by the handler) when
    the analyzer failed: a turn is stored and answered whatever happens here."""
    if analyzer is None or not text.strip():
        return None, ""
    try:
        return analyzer.analyze(text), ""
    except Exception as error:  # noqa: BLE001 - a turn never fails for its sentiment
        return None, f"{getattr(analyzer, 'name', 'sentiment')}: {type(error).__name__}: {error}"


# --- with the text model ------------------------------------------------------------------------

SENTIMENT_INSTRUCTION = (
    "Classify the sentiment of the user's message below. Answer with one word, positive, "
    "negative or neutral, then how strong it is from 0 to 1, for example: negative 0.8"
)
# What the message may take of the prompt (the whole call stays short, whatever its length).
MESSAGE_TOKENS = 300
MAX_ANSWER_TOKENS = 12
# The strength of a bare label ("negative"): FLAN-T5 and other small models answer so.
DEFAULT_STRENGTH = 0.5

# One label and at most one strength, after an optional "The sentiment of this message is"
# (a chatty model's way of answering), and nothing else on the line. Compiled on first use:
# the chat Lambda imports this module at cold start, and only SENTIMENT=model parses answers.
_ANSWER = (
    r"^(?:(?:the\s+)?sentiment(?:\s+of\s+(?:the|this)(?:\s+user's)?\s+message)?"
    r"\s*(?:is\b|[:=-])?\s*)?"
    r"(positive|negative|neutral)\b[\s,:;(=-]*"
    r"(?:(?:strength|score|intensity)\s*[:=]?\s*)?(-?(?:\d+(?:\.\d*)?|\.\d+))?\s*\)?[.!]?\s*$"
)


@cache
def _answer_pattern() -> re.Pattern[str]:
    return re.compile(_ANSWER, re.IGNORECASE)


def sentiment_prompt(text: str) -> str:
    message = clip_to_tokens(" ".join(text.split()), MESSAGE_TOKENS)
    return f"{SENTIMENT_INSTRUCTION}\n\nMessage: {message}\nSentiment:"


def parse_sentiment(answer: str) -> Sentiment | None:
    """The model's answer as a sentiment, or None when it is not one label and at most one
    strength from 0 to 1 (a sign on the strength is taken from the label; a neutral answer
    scores 0). The first line counts, once stripped of quotes, stars and a code fence."""
    lines = [line.strip(" \t`*\"'") for line in answer.strip().splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return None
    found = _answer_pattern().match(lines[0])
    if found is None:
        return None
    label = SentimentLabel(found.group(1).lower())
    if label == SentimentLabel.NEUTRAL:
        return Sentiment(label, 0.0)
    strength = DEFAULT_STRENGTH if found.group(2) is None else abs(float(found.group(2)))
    if strength > 1:
        return None  # "8" of 10, "80" percent: not the scale asked for
    strength = max(strength, POSITIVE_THRESHOLD)  # "positive 0" is still positive
    return sentiment_of_score(strength if label == SentimentLabel.POSITIVE else -strength)


class ModelSentimentAnalyzer:
    """SentimentAnalyzer: one call to the text model (a short prompt, at most 12 tokens back);
    VADER (`fallback`) when the answer is malformed or the model fails."""

    def __init__(self, generator: TextGenerator, fallback: SentimentAnalyzer) -> None:
        self.generator = generator
        self.fallback = fallback
        self.name = f"model:{generator.name}"
        self.fallbacks = 0

    def analyze(self, text: str) -> Sentiment:
        try:
            # No stop sequence: some APIs refuse a whitespace one; 12 tokens bound the answer.
            answer = self.generator.generate(
                sentiment_prompt(text), max_new_tokens=MAX_ANSWER_TOKENS
            )
        except ChatMemoryError:
            answer = None
        found = parse_sentiment(answer.text) if answer is not None else None
        if found is None:
            self.fallbacks += 1
            return self.fallback.analyze(text)
        return found
