"""A plainly labelled stand-in for a language model, so local mode runs with no model at all.

It does not pretend to understand: it says it is offline, echoes the message and shows what
memory put in front of it (the conversation so far, what auto-recall brought from earlier
conversations, and what the user told about themselves: the profile block), which is what a
person trying local mode wants to see. The profile is in every prompt, but the responder does
not recite it: to a message with something in it, it shows the profile's first line (the most
important: health and safety first) and the two closest to the message; to a greeting, only
how many facts it holds. Asked from notes
(/past, /verified) or shown recalled memory, it quotes the sentences closest to the question by
meaning (the embedder, when one is given) as well as by shared words: "dog" finds "greyhound".
Nothing it says is remembered (its Finish says `remember=False`): it is no model's answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from chatmemory.adapters.model_io import cut_at_stop
from chatmemory.errors import ChatMemoryError
from chatmemory.ports import (
    Embedder,
    Finish,
    GenerationOptions,
    Piece,
    TextGenerator,
    embed_queries,
)
from chatmemory.schema import (
    PROMPT_MEMORY_FOOTER,
    PROMPT_MEMORY_HEADER,
    PROMPT_PROFILE_FOOTER,
    PROMPT_PROFILE_HEADER,
    TEXT_STOPWORDS,
)
from chatmemory.services.longterm.terms import content_terms

LABEL = "[offline responder]"
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s?(.*)$")


class OfflineResponder(TextGenerator):
    name = "offline-responder"
    # No model reads this prompt; it stands in for the deployed default models, so it has
    # their context (adapters/bedrock.DEFAULT_CONTEXT_TOKENS, the OpenAI-compatible adapter's
    # default): the profile block and auto-recall get the room they would get in AWS.
    context_tokens = 4096
    # It writes what it writes, however long or warm an answer is asked for.
    honours = frozenset({"stop"})

    def __init__(self, embedder: Callable[[], Embedder | None] | None = None) -> None:
        """`embedder` builds the embedder on first use (quoting by meaning); None: by words."""
        self._embedder = embedder

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        """Its reply whole, or streamed word by word (as a model would write it)."""
        reply = self._reply(prompt)
        words: list[Piece] = _WORDS.findall(reply) if stream else [reply]
        words.append(Finish(model=self.name, remember=False))
        return cut_at_stop(words, options.stop)

    def _reply(self, prompt: str) -> str:
        lines = [line for line in prompt.splitlines() if line.strip()]
        # Grounded answers, summaries and labels first: their last line ends with ":" too.
        if lines and lines[-1] in ("Answer:", "Summary:", "Label:"):
            return self._task_reply(lines)
        if len(lines) >= 2 and lines[-1].endswith(":"):
            profile, lines = _split_profile(lines)
            recalled, lines = _split_memory(lines)
            user_match = _SPEAKER.match(lines[-2])
            user = user_match.group(1) if user_match else "User"
            message = user_match.group(2) if user_match else lines[-2]
            spoken = (m for m in map(_SPEAKER.match, lines[:-2]) if m and m.group(1) == user)
            history = [m.group(2) for m in spoken]
            summary = next((x for x in lines if x.startswith("Summary of the earlier")), "")
            return self._chat_reply(message, history, summary, recalled, profile)
        return f"{LABEL} No language model is configured."

    def _chat_reply(
        self,
        message: str,
        history: list[str],
        summary: str,
        recalled: list[tuple[str, str]],
        profile: list[str],
    ) -> str:
        parts = [f"{LABEL} No language model is configured, so I can only show what I remember."]
        parts.append(f'You said: "{message}".')
        if profile and content_terms(message):
            closest = self._closest(
                message, [(p, "") for p in profile[1:]], 2, require_overlap=False
            )
            weighed = [profile[0], *(p for p, _ in closest)]
            more = len(profile) - len(weighed)
            parts.append(
                "What you told me about yourself that a model would weigh here: "
                + "; ".join(fact.rstrip(".") for fact in weighed)
                + (f" (and {_things(more, 'more ')} you told me)." if more else ".")
            )
        elif profile:
            parts.append(f"I keep {_things(len(profile))} you told me about yourself in mind.")
        if recalled:
            quotes = self._closest(message, recalled, 2, require_overlap=False)
            shown = " ".join(f"[{where}] {sentence}" for sentence, where in quotes)
            parts.append(f"From earlier conversations I remember: {shown}")
        if history:
            parts.append(
                f"I can see {len(history)} earlier message(s) of yours in this conversation; "
                f'the last one was: "{history[-1]}".'
            )
        else:
            parts.append("I see no earlier messages in this conversation.")
        if summary:
            parts.append("I also have a summary of the older part of our conversation.")
        return " ".join(parts)

    def _task_reply(self, lines: list[str]) -> str:
        if lines[-1] == "Label:":
            return "chat"
        if lines[-1] == "Summary:":
            return " ".join(lines[1:-1])[:600]
        return self._grounded_reply(lines)

    def _grounded_reply(self, lines: list[str]) -> str:
        """An answer from retrieved notes or passages without a language model: the sentences
        closest to the question, with where they came from. The responder's own earlier
        replies in the notes are skipped: they quote, they do not inform."""
        asked = next((line for line in lines if line.startswith("Question:")), "")
        question = asked[len("Question:") :].strip()
        candidates: list[tuple[str, str]] = []
        where = ""
        for line in lines[1:]:
            if line.startswith("Question:"):
                break
            block = _BLOCK.match(line)
            if block:
                where, line = block.group(1), block.group(2)
            if LABEL in line:
                continue
            candidates += [(s, where) for s in _SENTENCE.split(line) if s.strip()]
        quotes = self._closest(question, candidates, 2, require_overlap=True)
        if not quotes:
            return f"{LABEL} I found notes, but none of them mentions what you asked."
        shown = " ".join(f"[{w}] {s}" if w else s for s, w in quotes)
        return f"{LABEL} Without a language model I can only quote what I found: {shown}"[:800]

    def _closest(
        self, query: str, candidates: list[tuple[str, str]], n: int, *, require_overlap: bool
    ) -> list[tuple[str, str]]:
        """The `n` candidate sentences closest to `query`: cosine of their embeddings plus a
        share for words they share; each sentence once (a session's summary and transcript
        repeat them). Without an embedder (or if it fails), by shared words alone, and then a
        sentence sharing none is never a quote when `require_overlap`."""
        unique: dict[str, str] = {}
        for sentence, where in candidates:
            unique.setdefault(" ".join(sentence.split()), where)
        if not unique:
            return []
        texts = list(unique)
        wanted = _terms(query)
        overlap = [len(_terms(t) & wanted) / math.sqrt(max(len(_terms(t)), 1)) for t in texts]
        meaning = self._similarities(query, texts)
        if meaning is None:
            scored = [(o, i) for i, o in enumerate(overlap) if o > 0 or not require_overlap]
        else:
            # Close enough by meaning, or sharing a word, to count as being about the question.
            scored = [
                (m + 0.2 * o, i)
                for i, (m, o) in enumerate(zip(meaning, overlap, strict=True))
                if m >= _RELATED or o > 0 or not require_overlap
            ]
        best = sorted(scored, key=lambda pair: (-pair[0], pair[1]))[:n]
        return [(texts[i], unique[texts[i]]) for _, i in sorted(best, key=lambda p: p[1])]

    def _similarities(self, query: str, texts: list[str]) -> list[float] | None:
        embedder = self._embedder() if self._embedder is not None else None
        if embedder is None:
            return None
        try:
            [asked] = embed_queries(embedder, [query])
            vectors = embedder.embed(texts)
        except ChatMemoryError:
            return None
        return [sum(a * b for a, b in zip(asked, v, strict=True)) for v in vectors]


# A word and the space after it: a streamed reply's pieces.
_WORDS = re.compile(r"\S+\s*|\s+")
_BLOCK = re.compile(r"^\[([^\]]{1,80})\]\s*(.*)$")
# Cosine above which a sentence is about the question even with no word in common
# (all-MiniLM-L6-v2: "dog" and "rescue greyhound" are ~0.5 apart, unrelated sentences ~0.1).
_RELATED = 0.35
_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_COMMON = frozenset(TEXT_STOPWORDS)


def _terms(text: str) -> set[str]:
    """Content words, crudely singular ("tomatoes" and "tomato" meet)."""
    words = set(_WORD.findall(text.lower())) - _COMMON
    return {re.sub(r"(?<=\w\w\w)(es|s)$", "", w) for w in words}


def _split_memory(lines: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Auto-recall's block out of a chat prompt: its sentences with their labels ("2023-05-08"),
    and the prompt's other lines."""
    if PROMPT_MEMORY_HEADER not in lines:
        return [], lines
    start = lines.index(PROMPT_MEMORY_HEADER)
    end = lines.index(PROMPT_MEMORY_FOOTER) if PROMPT_MEMORY_FOOTER in lines else start
    recalled: list[tuple[str, str]] = []
    where = ""
    for line in lines[start + 1 : end]:
        block = _BLOCK.match(line)
        if block:
            where, line = block.group(1), block.group(2)
        speaker = _SPEAKER.match(line)
        said = speaker.group(2) if speaker and len(speaker.group(1).split()) <= 3 else line
        recalled += [(s, where) for s in _SENTENCE.split(said) if s.strip()]
    return recalled, lines[:start] + lines[end + 1 :]


def _things(count: int, more: str = "") -> str:
    """ "1 more thing", "3 things"."""
    return f"{count} {more}thing{'' if count == 1 else 's'}"


def _split_profile(lines: list[str]) -> tuple[list[str], list[str]]:
    """The profile block out of a chat prompt: its facts, best first, and the other lines."""
    if PROMPT_PROFILE_HEADER not in lines:
        return [], lines
    start = lines.index(PROMPT_PROFILE_HEADER)
    end = lines.index(PROMPT_PROFILE_FOOTER) if PROMPT_PROFILE_FOOTER in lines else start
    facts = [line.removeprefix("- ").strip() for line in lines[start + 1 : end]]
    return [f for f in facts if f], lines[:start] + lines[end + 1 :]
