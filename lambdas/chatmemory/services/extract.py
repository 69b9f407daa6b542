"""Extracting the user's durable facts and preferences from a session, with or without a model.

PatternExtractor (no model: local mode, tests, the offline default) keeps what the user states
about themselves: a sentence in the first person ("I", "my", "we", "our"), not a question, with
enough content to be a fact. A sentence about a liking or a dislike is a preference. Some
sentences name what they are about (where the user lives, their job, their partner, their name;
the thing they like or dislike): the `subject` under which a newer record replaces an older one.
The rest carry no subject and only merge with duplicates.

ModelExtractor asks a text model, one call per chunk of the user's lines (at most 8 chunks, all
at once: one round, as summaries), for one JSON object per line; what does not parse, names a
turn outside its chunk or an unknown type is dropped (tests/unit/recorded holds real answers,
malformed ones included).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from chatmemory.domain import Turn
from chatmemory.ports import ExtractedFact, TextGenerator
from chatmemory.schema import TEXT_STOPWORDS, Intent, RecordType
from chatmemory.services.prompt import clip_to_tokens, estimate_tokens
from chatmemory.services.summarize import (
    DEFAULT_BUDGET,
    SummaryBudget,
    select_lines,
    split_lines,
)

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9']+")
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|im|my|me|we|we're|we've|our|us)\b", re.I)
_QUESTION_START = re.compile(
    r"^(what|who|when|where|why|how|which|do|does|did|is|are|can|could|would|should|will|"
    r"have|has)\b",
    re.I,
)
_STOP = frozenset(TEXT_STOPWORDS) | frozenset(
    "yes yeah oh hey hi hello okay ok really thanks thank got get also just so lol haha wow "
    "im i'm i've i'd i'll we're we've".split()
)
# Liking and disliking: the object is what the preference is about.
_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|absolutely\s+|just\s+|don't\s+|do not\s+|can't\s+)?"
    r"(love|like|enjoy|adore|prefer|hate|dislike|detest|stand)s?\s+(?:the\s+|a\s+|an\s+|my\s+)?"
    r"([a-z][a-z'-]+(?:\s+[a-z][a-z'-]+)?)",
    re.I,
)
_FAVOURITE = re.compile(r"\bmy\s+favou?rite\s+([a-z]+)\s+(?:is|are)\b", re.I)
# What some facts are about: one value at a time (a newer one replaces the older).
_SUBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "residence",
        re.compile(
            r"\b(i|we)\s+(now\s+)?(live|lived|am living|are living|moved|have moved|'ve moved|"
            r"relocated|am moving|are moving)\b|\b(i|we)'(m|re) (living|moving)\b",
            re.I,
        ),
    ),
    (
        "job",
        re.compile(
            r"\bi\s+(work|am working|started working)\s+(as|at|for)\b|\bmy (new )?job\b|"
            r"\bi'm an? [a-z]+ (at|for)\b",
            re.I,
        ),
    ),
    (
        "partner",
        re.compile(r"\bmy (wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?)\b", re.I),
    ),
    ("name", re.compile(r"\bmy name is\b|\bcall me\b", re.I)),
)
MAX_PER_SESSION = 24


def classify(text: str) -> tuple[RecordType, str]:
    """The type and subject of a statement (a record the user states: /remember)."""
    fact = PatternExtractor(min_content_words=1)._fact(text, 0)
    if fact is None:
        return RecordType.FACT, _subject(text)
    return fact.type, fact.subject


def _subject(text: str) -> str:
    return next((name for name, pattern in _SUBJECTS if pattern.search(text)), "")


class PatternExtractor:
    """Extractor: first-person statements of the user's turns, a few at most per session."""

    name = "patterns"

    def __init__(self, max_per_session: int = MAX_PER_SESSION, min_content_words: int = 3) -> None:
        self.max_per_session = max_per_session
        self.min_content_words = min_content_words

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        found: list[tuple[float, int, ExtractedFact]] = []
        for turn in said(turns):
            for sentence in _sentences(turn.input):
                fact = self._fact(sentence, turn.turn)
                if fact is not None:
                    score = len(_content(sentence))
                    found.append((score, len(found), fact))
        # The most informative statements when a session has many, in their order.
        kept = sorted(found, key=lambda f: (-f[0], f[1]))[: self.max_per_session]
        return [fact for _, _, fact in sorted(kept, key=lambda f: f[1])]

    def _fact(self, sentence: str, turn: int) -> ExtractedFact | None:
        text = sentence.strip().strip("\"'").strip()
        if (
            not text
            or text.endswith("?")
            or _QUESTION_START.match(text)
            or not _FIRST_PERSON.search(text)
            or len(_content(text)) < self.min_content_words
        ):
            return None
        preference = _PREFERENCE.search(text)
        favourite = _FAVOURITE.search(text)
        if preference or favourite:
            thing = favourite.group(1) if favourite else _head(preference.group(2))  # type: ignore[union-attr]
            return ExtractedFact(RecordType.PREFERENCE, text, f"likes:{thing}", turn)
        return ExtractedFact(RecordType.FACT, text, _subject(text), turn)


def said(turns: Sequence[Turn]) -> list[Turn]:
    """The turns whose input is the user talking: commands (/past, /remember...) are not
    statements, and what /remember stored is a record already."""
    return [t for t in turns if t.input and t.intent == Intent.CHAT]


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text or "") if s.strip()]


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1]


def _head(phrase: str) -> str:
    """The liked thing's main word: "hiking in the alps" -> "hiking"."""
    words = [w for w in _WORD.findall(phrase.lower()) if w not in _STOP]
    return words[0] if words else phrase.lower()


EXTRACT_INSTRUCTION = (
    "List the durable facts and preferences the user states about themselves in these lines: "
    "who they are, people, places, plans, likes and dislikes, decisions. Write one JSON object "
    'per line: {"type": "fact" or "preference", "subject": a short key of what it is about '
    '("residence", "job", "partner", "likes:coffee"; "" if none), "text": the fact in one '
    'sentence, "turn": the number in brackets}. Write nothing else; nothing if there is none.'
)
_OBJECT = re.compile(r"\{.*?\}")
MAX_TEXT_CHARS = 300


def parse_facts(answer: str, turns: set[int]) -> list[ExtractedFact]:
    """The facts of a model's answer: JSON objects one per line (prose, code fences and bad
    lines around them are ignored); a turn outside `turns`, an unknown type or an empty text
    drops that line only."""
    facts: list[ExtractedFact] = []
    for found in _OBJECT.findall(answer):
        try:
            data = json.loads(found)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        kind, text, subject = data.get("type"), data.get("text"), data.get("subject", "")
        turn = data.get("turn")
        if isinstance(turn, str) and turn.strip().isdigit():
            turn = int(turn)
        if (
            kind not in (RecordType.FACT, RecordType.PREFERENCE)
            or not isinstance(text, str)
            or not text.strip()
            or not isinstance(turn, int)
            or isinstance(turn, bool)
            or turn not in turns
        ):
            continue
        subject = subject.strip().lower()[:60] if isinstance(subject, str) else ""
        facts.append(ExtractedFact(RecordType(kind), text.strip()[:MAX_TEXT_CHARS], subject, turn))
    return facts


class ModelExtractor:
    """Extractor on a TextGenerator: bounded like summaries (at most `max_map_calls` calls,
    all at once); `calls` counts them."""

    def __init__(
        self,
        generator: TextGenerator,
        *,
        max_new_tokens: int = 256,
        budget: SummaryBudget = DEFAULT_BUDGET,
    ) -> None:
        self.generator = generator
        self.name = f"extract:{generator.name}"
        self.max_new_tokens = max_new_tokens
        self.budget = budget
        self.calls = 0
        self._count = threading.Lock()

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        lines = [f"[{t.turn}] {t.input}" for t in sorted(said(turns), key=lambda t: t.turn)]
        if not lines:
            return []
        space = int(self.generator.context_tokens * 0.9) - estimate_tokens(EXTRACT_INSTRUCTION) - 4
        space = max(space - self.max_new_tokens // 2, 32)
        chunks = split_lines(lines, space)
        if len(chunks) > self.budget.max_map_calls:
            allowed = int(space * self.budget.max_map_calls * 0.9)
            chunks = split_lines(select_lines(lines, allowed), space)[: self.budget.max_map_calls]
        workers = max(1, min(self.budget.concurrency, len(chunks)))
        with ThreadPoolExecutor(workers, thread_name_prefix="extract") as pool:
            answers = list(pool.map(self._call, chunks))
        facts: list[ExtractedFact] = []
        for chunk, answer in zip(chunks, answers, strict=True):
            numbers = {int(n) for n in re.findall(r"^\[(\d+)\]", chunk, re.M)}
            facts += parse_facts(answer, numbers)
        return facts

    def _call(self, chunk: str) -> str:
        with self._count:
            self.calls += 1
        prompt = f"{EXTRACT_INSTRUCTION}\n{clip_to_tokens(chunk, 10_000)}\nFacts:"
        return self.generator.generate(prompt, max_new_tokens=self.max_new_tokens).text
