"""The sentiment of a user's message: a label and a score in [-1, 1], on every user turn.

The label follows VADER's documented convention for its compound score (Hutto & Gilbert 2014,
and the vaderSentiment README): at least +0.05 is positive, at most -0.05 negative, neutral
between. The offline analyzer is VADER itself (adapters/offline/sentiment.py). With
SENTIMENT=model the text model is asked instead, in one short call per chat turn
(ModelSentimentAnalyzer): its answer is one label and a strength, and anything else (or a
model that fails) falls back to VADER (tests/unit/recorded/sentiment holds real answers,
malformed ones included). A turn never fails for its sentiment: `analyze_input` turns an
analyzer's error into no sentiment and a reason for the handler to log.

Two things are not read as the user's mood. A command (`/remember I am allergic to peanuts`,
`/past what went wrong?`) is not scored at all: it asks the service for something, its words
are its subject. And a question whose only negative words are what it asks about ("what should
I avoid cooking?", "how do I treat a headache?": `topical_question`) is neutral with VADER,
which scores words, not what they are for; a question that complains (emphasis, a word against
the one addressed) keeps its score. tests/unit/labelled/chat_sentiment.tsv measures both.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Collection, Mapping
from functools import cache

from chatmemory.domain import Sentiment
from chatmemory.errors import BadRequest, ChatMemoryError
from chatmemory.ports import SentimentAnalyzer, TextGenerator
from chatmemory.schema import SentimentLabel
from chatmemory.services.conversation.routing import parse_prefix
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


def is_command(text: str) -> bool:
    """`/past ...`, `/verified ...`, `/remember ...`, `/human ...` (a bare one too)."""
    try:
        return parse_prefix(text).routed_by == "prefix"
    except BadRequest:  # a command with nothing after it
        return True


def analyze_input(analyzer: SentimentAnalyzer | None, text: str) -> tuple[Sentiment | None, str]:
    """The sentiment of a user's message as typed, or None: for a command (not scored), or with
    the reason (logged by the handler) when the analyzer failed: a turn is stored and answered
    whatever happens here."""
    if analyzer is None or not text.strip() or is_command(text):
        return None, ""
    try:
        return analyzer.analyze(text), ""
    except Exception as error:  # noqa: BLE001 - a turn never fails for its sentiment
        return None, f"{getattr(analyzer, 'name', 'sentiment')}: {type(error).__name__}: {error}"


# --- questions about something negative ----------------------------------------------------------
#
# VADER adds up the valence of words: "what should I avoid cooking for myself?" is negative
# because "avoid" is (-1.2), "what can I do about my back pain?" because "pain" is. A question's
# negative words are usually what it asks about, not how its writer feels. They are read as the
# writer's own when the question also carries what VADER itself reads as stance (an exclamation
# mark, a shouted word, a booster such as "so" or "really" up to three words before a negative
# word, a negative emoticon), when a negative word is said of the one addressed or the thing at
# hand: within two words of "you", "your", "this", "these" or "those" ("what is wrong with
# you?", "who designed this awful menu?"), or when it comes before the question ("stupid
# thing, how do I ...?", "WTF?", which asks nothing). A message made of such questions (and of
# sentences with no negative word) whose every negative word is its topic is neutral.

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are am was were do does did can could "
    "should would will shall may might must have has".split()
)
_CONTRACTED = re.compile(r"(?:'s|'re|'ll|'d|'ve|'m)$")  # what's, who'd, where've
_NEGATED = re.compile(r"n't$")  # isn't, doesn't, can't (ca), won't (wo)
_NEGATED_STEMS = {"ca": "can", "wo": "will", "sha": "shall"}


def _asks(word: str) -> bool:
    """A question word, contracted ("what's") or negated ("isn't", "can't") as typed."""
    word = _CONTRACTED.sub("", word.replace("’", "'"))
    stem = _NEGATED.sub("", word)
    return _NEGATED_STEMS.get(stem, stem) in _QUESTION_WORDS


_ADDRESSED = frozenset({"you", "your", "yours", "yourself", "this", "these", "those"})
ADDRESSED_WINDOW = 2  # words on either side of a negative word
BOOSTER_WINDOW = 3  # VADER's own reach of a booster before a sentiment word
SHOUTED_LETTERS = 4  # a word in capitals this long is shouted (shorter ones: USB, NHS)


def _question_start(words: list[str], sentence: str) -> int | None:
    """Where the question of `sentence` starts (its first question word), or None when it is
    no question: it ends with "?", or (as chat questions are often typed) with no full stop or
    exclamation mark after a question word at its start."""
    asks = [i for i, word in enumerate(words) if _asks(word)]
    if not asks or not (sentence.endswith("?") or (asks[0] == 0 and sentence[-1] not in ".!")):
        return None
    return asks[0]


def topical_question(
    text: str,
    *,
    valence: Callable[[str], float | None],
    boosters: Collection[str],
) -> bool:
    """True when `text` holds negative words and each of them is the topic of a question (see
    above). `valence` is a word's score in the sentiment lexicon (None when it has none; a word
    is lowercased, an emoticon as typed), `boosters` the lexicon's intensifiers."""
    found_negative = False
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = sentence.strip()
        tokens = sentence.split()
        words = [t.strip(string.punctuation).lower() for t in tokens]
        negative = []
        for i, (token, word) in enumerate(zip(tokens, words, strict=True)):
            is_word = any(c.isalpha() for c in word)
            score = valence(word) if is_word else valence(token)
            if score is not None and score < 0:
                if not is_word:
                    return False  # a negative emoticon is the writer's mood
                negative.append(i)
        if not negative:
            continue
        found_negative = True
        start = _question_start(words, sentence)
        # What comes before the question ("ugh, why ...", "stupid thing, how ...") is no topic.
        if start is None or "!" in sentence or negative[0] < start:
            return False
        for i in negative:
            near = words[max(0, i - ADDRESSED_WINDOW) : i + ADDRESSED_WINDOW + 1]
            before = words[max(0, i - BOOSTER_WINDOW) : i]
            if _ADDRESSED.intersection(near) or any(w in boosters for w in before):
                return False
        for token in tokens:
            letters = token.strip(string.punctuation)
            if len(letters) >= SHOUTED_LETTERS and letters.isalpha() and letters.isupper():
                return False
    return found_negative


def neutral_if_topical(
    found: Sentiment,
    text: str,
    *,
    valence: Mapping[str, float],
    boosters: Collection[str],
) -> Sentiment:
    """`found` (a lexicon's score of `text`), or neutral when it is negative only because of
    what the questions of `text` ask about."""
    if found.label != SentimentLabel.NEGATIVE:
        return found
    if topical_question(text, valence=valence.get, boosters=boosters):
        return Sentiment(SentimentLabel.NEUTRAL, 0.0)
    return found


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
