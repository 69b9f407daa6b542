"""An extractive summarizer: no model, deterministic, keeps the most informative lines."""

from __future__ import annotations

import re
from collections import Counter

from chatmemory.schema import TEXT_STOPWORDS

_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# The index's stopwords (schema.TEXT_STOPWORDS), plus what people say in chat that carries no
# content for a summary (greetings, fillers): a sentence is scored by its other words.
_FILLERS = frozenset("yes yeah oh hey hi okay ok really thanks thank like got get also".split())
_STOPWORDS = frozenset(TEXT_STOPWORDS) | _FILLERS


class ExtractiveSummarizer:
    """Summarizer: scores sentences by how many sentences of the whole text hold their content
    words (a classic Luhn-style summary) with a small bonus for the opening, and keeps the best ones
    in their original order, each with its speaker label."""

    name = "extractive"

    def __init__(self, max_words: int = 120) -> None:
        self.max_words = max_words

    def summarize(self, text: str) -> str:
        sentences = _sentences(text)
        if not sentences:
            return ""
        # In how many sentences each word is: "back to back" is one sentence's, no theme.
        freq = Counter(w for _, s in sentences for w in set(_content(s)))
        if not freq:
            return " ".join(f"{sp}: {s}" if sp else s for sp, s in sentences)[: self.max_words * 8]
        top = max(freq.values())
        # Luhn's "significant" words: those that recur (when anything recurs at all).
        floor = 2 if top >= 2 else 1
        scored = []
        for position, (_, sentence) in enumerate(sentences):
            words = set(_content(sentence))
            if not words:
                continue
            score = sum(freq[w] / top for w in words if freq[w] >= floor) / (len(words) ** 0.5)
            if position < 2:
                score *= 1.2
            scored.append((score, position))
        if any(score > 0 for score, _ in scored):
            scored = [pair for pair in scored if pair[0] > 0]  # greetings and fillers go
        chosen: list[int] = []
        used = 0
        for _, position in sorted(scored, key=lambda pair: (-pair[0], pair[1])):
            length = len(sentences[position][1].split())
            if used and used + length > self.max_words:
                continue
            chosen.append(position)
            used += length
            if used >= self.max_words:
                break
        return " ".join(_labelled(sentences[p]) for p in sorted(chosen))

    def extend(self, summary: str, new_text: str) -> str:
        """Rolling summary: the previous summary competes with the new turns for the budget."""
        return self.summarize(f"{summary}\n{new_text}" if summary else new_text)


def _sentences(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        speaker, sep, body = line.partition(": ")
        if not sep or len(speaker) > 40:
            speaker, body = "", line
        out += [(speaker, s) for s in _SENTENCE.split(body) if s.strip()]
    return out


def _content(sentence: str) -> list[str]:
    return [w for w in _WORD.findall(sentence.lower()) if w not in _STOPWORDS and len(w) > 1]


def _labelled(item: tuple[str, str]) -> str:
    speaker, sentence = item
    return f"{speaker}: {sentence}" if speaker else sentence
