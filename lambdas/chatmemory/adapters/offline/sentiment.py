"""VADER sentiment (the PyPI package vaderSentiment: lexicon and rules, pure Python, offline).

Hutto & Gilbert, "VADER: A Parsimonious Rule-based Model for Sentiment Analysis of Social Media
Text" (ICWSM 2014). Its compound score lies in [-1, 1]; the label follows its documented
convention (services/conversation/sentiment.py). The package and its lexicon load on the first
message, not at import: the chat Lambda's cold start does not pay for them (about 15 ms, once per
process).

VADER's time grows with the square of a text's words (its negation check lowercases the whole
text again for each sentiment word; an emoji becomes the words that describe it): 4,000
characters of emoji take 4 s, of "a bad " 0.1 s. A message of up to 60 words (after emoji, which
is nearly every chat message) is scored whole, as VADER scores it; a longer one by pieces of at
most 60 words along its sentences, their compound scores averaged (what VADER's own demo does
for a paragraph), and at most 32 pieces: the first 1,920 words, more than 4,000 characters of
prose hold. A message then costs at most about 20 ms (4,000 characters of emoji).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatmemory.domain import Sentiment
from chatmemory.errors import ModelUnavailable
from chatmemory.services.conversation.sentiment import neutral_if_topical, sentiment_of_score

PIECE_WORDS = 60
MAX_PIECES = 32
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@lru_cache(maxsize=1)
def _analyzer() -> Any:
    """VADER's analyzer (the package's own class and rules), its tables read as below."""
    try:
        from vaderSentiment import vaderSentiment
    except ImportError as error:
        raise ModelUnavailable(
            f"VADER sentiment needs `pip install vaderSentiment==3.3.2` ({error})"
        ) from error

    class Vader(vaderSentiment.SentimentIntensityAnalyzer):  # type: ignore[misc]
        """VADER, which reads its two tables line by line in Python when it is made (56 M
        instructions, the largest cost of a chat function's first message; 28 M here): the
        lexicon is split in one pass, and the emoji table (by VADER's loop) is read only for a
        text that is not all ASCII (no emoji is), which most chat messages are. Its tables and
        scores are VADER's (tests/unit/test_sentiment.py holds them to the package's own)."""

        def __init__(self) -> None:
            folder = Path(vaderSentiment.__file__).parent
            self.emoji_file = folder / "emoji_utf8_lexicon.txt"
            self.emojis: dict[str, str] = {}
            self.lexicon_full_filepath = _read(folder / "vader_lexicon.txt")  # VADER's name
            split = _split_lexicon(self.lexicon_full_filepath)
            if split is None:
                self.lexicon = self.make_lex_dict()
            else:
                self.lexicon = dict(zip(split[0], map(float, split[1]), strict=True))

        def emojis_for(self, text: str) -> dict[str, str]:
            """The emoji table, read the first time a text may hold an emoji."""
            if not self.emojis and not text.isascii():
                self.emoji_full_filepath = _read(self.emoji_file)  # VADER's name
                self.emojis = self.make_emoji_dict()
            return self.emojis

        def polarity_scores(self, text: str) -> dict[str, float]:
            self.emojis_for(text)
            scores: dict[str, float] = super().polarity_scores(text)
            return scores

    return Vader()


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # as VADER's codecs.open: no newline translation


def _split_lexicon(text: str) -> tuple[list[str], list[str]] | None:
    """The words and valences of VADER's lexicon (four fields a line), split in one pass (a
    word's last line wins, as in VADER's loop), or None when a line has not four fields: VADER's
    own loop reads such a lexicon."""
    text = text.rstrip("\n")
    cells = text.replace("\n", "\t").split("\t")
    if len(cells) != 4 * (text.count("\n") + 1):
        return None
    return cells[0::4], cells[1::4]


def _without_emoji(text: str, emojis: dict[str, str]) -> str:
    """Each emoji replaced by its description, exactly as VADER's polarity_scores does first
    (so that the words can be counted before VADER sees them; VADER then finds none left)."""
    out: list[str] = []
    prev_space = True
    for char in text:
        description = emojis.get(char)
        if description is not None:
            if not prev_space:
                out.append(" ")
            out.append(description)
            prev_space = False
        else:
            out.append(char)
            prev_space = char == " "
    return "".join(out).strip()


def pieces(text: str, words: int = PIECE_WORDS, limit: int = MAX_PIECES) -> list[str]:
    """Consecutive sentences packed into pieces of at most `words` words (a longer sentence
    is cut), the first `limit` of them."""
    found: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(text):
        tokens = sentence.split()
        if current and len(current) + len(tokens) > words:
            found.append(" ".join(current))
            current = []
        while len(tokens) > words:
            found.append(" ".join(tokens[:words]))
            tokens = tokens[words:]
        current += tokens
        if len(found) >= limit:
            return found[:limit]
    if current:
        found.append(" ".join(current))
    return found[:limit]


class VaderSentimentAnalyzer:
    """SentimentAnalyzer: VADER's compound score (about 50 µs for a chat message, about 20 ms at
    worst). Safe across threads: VADER keeps no state between calls."""

    name = "vader"

    def analyze(self, text: str) -> Sentiment:
        vader = _analyzer()
        plain = _without_emoji(text, vader.emojis_for(text))
        if len(plain.split()) <= PIECE_WORDS:
            found = sentiment_of_score(float(vader.polarity_scores(plain)["compound"]))
            # A question about something negative is not a negative message (issue 44).
            return neutral_if_topical(found, text, valence=vader.lexicon, boosters=_boosters())
        parts = pieces(plain)
        total = sum(float(vader.polarity_scores(part)["compound"]) for part in parts)
        return sentiment_of_score(total / len(parts))


@lru_cache(maxsize=1)
def _boosters() -> frozenset[str]:
    """VADER's intensifiers ("so", "really", "extremely"...), the ones that raise a score."""
    from vaderSentiment.vaderSentiment import BOOSTER_DICT

    return frozenset(word for word, value in BOOSTER_DICT.items() if value > 0)
