"""Prompt building (window, rolling summary, token budget) and cleaning of model output.

The token count is an estimate (words, characters of scripts written without spaces and
punctuation, scaled for subword tokenizers): good enough to keep a prompt under a model's input
limit with a margin, and free of any tokenizer dependency in the Lambda asset.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from chatmemory.domain import Turn
from chatmemory.ports import STOP_SEQUENCE, Finish, Piece
from chatmemory.schema import TurnOrigin

# A piece is a word of a script written with spaces between words (Latin, Greek, Cyrillic,
# Arabic, Hebrew: below U+0800), a punctuation mark, or one character of the other scripts (CJK,
# kana, Hangul, Thai, Devanagari: U+0800 and up), which tokenizers make one token or more each:
# counted as words, a Chinese paragraph would be a few tokens however long.
# The word characters (\w) below U+0800, written out: compiling `[^\W\u0800-\U0010ffff]`, the
# same set, took 2 ms of every cold start (tests/unit/test_prompt.py holds the two equal).
SPACED_WORD_CHARS = (
    "0-9A-Z_a-z\u00aa\u00b2-\u00b3\u00b5\u00b9-\u00ba\u00bc-\u00be\u00c0-\u00d6\u00d8-\u00f6"
    "\u00f8-\u02c1\u02c6-\u02d1\u02e0-\u02e4\u02ec\u02ee\u0370-\u0374\u0376-\u0377\u037a-\u037d"
    "\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f"
    "\u0531-\u0556\u0559\u0560-\u0588\u05d0-\u05ea\u05ef-\u05f2\u0620-\u064a\u0660-\u0669"
    "\u066e-\u066f\u0671-\u06d3\u06d5\u06e5-\u06e6\u06ee-\u06fc\u06ff\u0710\u0712-\u072f"
    "\u074d-\u07a5\u07b1\u07c0-\u07ea\u07f4-\u07f5\u07fa"
)
_PIECES = re.compile(f"[{SPACED_WORD_CHARS}]+|[^\\w\\s]|\\w")
# Subword tokenizers (SentencePiece, BPE) split rarer words: ~1.3 tokens per word on English.
_TOKENS_PER_PIECE = 1.3
# A run longer than any word (a URL, base64, a hash) is many tokens: one per 4 characters.
_LONGEST_WORD = 16
_CHARS_PER_PIECE_OF_A_RUN = 4


def estimate_tokens(text: str) -> int:
    pieces = sum(
        1 if len(piece) <= _LONGEST_WORD else math.ceil(len(piece) / _CHARS_PER_PIECE_OF_A_RUN)
        for piece in _PIECES.findall(text)
    )
    return math.ceil(pieces * _TOKENS_PER_PIECE)


class Roles(NamedTuple):
    user: str = "User"
    assistant: str = "Assistant"
    # A person who answered while the session was handed off (services/conversation/handoff.py).
    agent: str = "Agent"

    def stop_words(self) -> list[str]:
        """Anti-prompts: the model starting a new speaker line means its answer is over."""
        return [f"{self.user}:", f"{self.assistant}:", f"{self.agent}:"]


@dataclass
class BuiltPrompt:
    text: str
    turns_used: int
    tokens: int
    # The characters at its start that stay the same from turn to turn: the system line and the
    # profile block (GenerationOptions.constant_prefix).
    constant_prefix: int = 0


def render_turn(turn: Turn, roles: Roles) -> str:
    if turn.origin == TurnOrigin.AGENT:
        # A person's reply while the session was handed off: no input of its own.
        return f"{roles.agent}: {turn.response or ''}"
    # A message stored for the agent has no response: a user line without an answer.
    lines = [f"{roles.user}: {turn.input}"]
    if turn.response:
        stopped = f" {STOPPED_MARK}" if turn.stopped else ""
        lines.append(f"{roles.assistant}: {turn.response}{stopped}")
    return "\n".join(lines)


# After an answer the user stopped halfway, in the prompts that follow: the model knows it was
# cut off by the user, not finished.
STOPPED_MARK = "[the user stopped this answer here]"


def _newest_that_fit(window: Sequence[Turn], roles: Roles, budget: int) -> list[str]:
    """The newest turns of `window` that fit `budget` tokens, rendered, oldest first."""
    kept: list[str] = []
    for turn in reversed(window):
        rendered = render_turn(turn, roles)
        cost = estimate_tokens(rendered)
        if cost > budget:
            break
        kept.append(rendered)
        budget -= cost
    kept.reverse()
    return kept


def build_chat_prompt(
    *,
    system: str,
    summary: str,
    window: Sequence[Turn],
    message: str,
    roles: Roles,
    token_budget: int,
    memory: str = "",
    note: str = "",
    profile: str = "",
) -> BuiltPrompt:
    """System line, the profile block, recalled long-term memory, rolling summary of older
    turns, the newest turns that fit, the new message.

    `profile` (the user's lasting facts) and `memory` (auto-recall's block), each already
    within its own budget, come on top of `token_budget`, which is the conversation's; the
    caller keeps them all within the model's context. The system line and the profile come
    first: the part of the prompt that stays the same from turn to turn, which a model that
    caches prompts reads once. Oldest window turns are dropped first; if the summary alone
    overflows, its beginning is cut (the end is the most recent part of a rolling summary).
    """
    blocks = (system.strip(), profile.strip(), note.strip(), memory.strip())
    head = "\n".join(block for block in blocks if block)
    # The message is what gets answered, so it is placed before the summary and the window; one
    # longer than what the system line and note leave (the API takes 32,000 characters, TGI in
    # deploy mode 3,072 tokens) keeps its start and its end, where a request and its question
    # usually are. Not TGI's "truncate": it keeps the prompt's last tokens, so it would drop the
    # system line and the recalled memory before any of the message, and only TGI has it.
    frame = estimate_tokens(f"{roles.user}: \n{roles.assistant}:")
    # The blocks of memory are on top of the budget.
    head_tokens = estimate_tokens(head) - estimate_tokens(memory) - estimate_tokens(profile)
    message = clip_middle(message, max(token_budget - frame - head_tokens, token_budget // 4))
    tail = f"{roles.user}: {message}\n{roles.assistant}:"
    fixed = head_tokens + estimate_tokens(tail)
    budget_left = token_budget - fixed
    summary_block = ""
    if summary:
        summary_block = f"Summary of the earlier conversation: {summary.strip()}"
        summary_tokens = estimate_tokens(summary_block)
        if summary_tokens > budget_left:
            summary_block = _keep_tail(summary_block, max(budget_left, 0))
        budget_left -= estimate_tokens(summary_block)
    kept = _newest_that_fit(window, roles, budget_left)
    parts = [p for p in (head, summary_block, *kept, tail) if p]
    text = "\n".join(parts)
    constant = "\n".join(block for block in blocks[:2] if block)
    return BuiltPrompt(
        text=text,
        turns_used=len(kept),
        tokens=estimate_tokens(text),
        constant_prefix=len(constant) if text.startswith(constant) else 0,
    )


def _keep_tail(text: str, tokens: int) -> str:
    words = text.split()
    while len(words) > 1 and estimate_tokens(" ".join(words)) > tokens:
        words = words[max(1, len(words) // 10) :]
    kept = " ".join(words)
    # One word over the budget: text written without spaces, cut between characters.
    return kept if estimate_tokens(kept) <= tokens else kept[len(kept) - _fit_end(kept, tokens) :]


# What stands for the middle of a clipped text.
ELISION = " [...] "


def clip_middle(text: str, tokens: int) -> str:
    """`text` within about `tokens` tokens: its start and its end, the middle replaced by
    ELISION, each cut at a word where the text has spaces."""
    if estimate_tokens(text) <= tokens:
        return text
    room = max(tokens - estimate_tokens(ELISION), 0)
    start = _fit_start(text, room - room // 2)
    end = _fit_end(text, room // 2)
    return f"{text[:start].rstrip()}{ELISION}{text[len(text) - end :].lstrip()}"


def _fit_start(text: str, tokens: int) -> int:
    """The length of the longest start of `text` within `tokens`, ending at a word's end when a
    space is near."""
    lo, hi = 0, len(text)
    while lo < hi:  # the estimate of a start only grows with its length
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    if 0 < lo < len(text) and not text[lo].isspace():
        space = max(text.rfind(" ", 0, lo), text.rfind("\n", 0, lo))
        if space > lo - 40:
            lo = max(space, 0)
    return lo


def _fit_end(text: str, tokens: int) -> int:
    """The length of the longest end of `text` within `tokens`, starting at a word's start when
    a space is near."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[len(text) - mid :]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = len(text) - lo
    if 0 < cut < len(text) and not text[cut - 1].isspace():
        space = min(i for i in (text.find(" ", cut), text.find("\n", cut), len(text)) if i >= 0)
        if space < cut + 40:
            lo = len(text) - space
    return lo


def longest_prefix(count: int, fits: Callable[[int], bool]) -> int:
    """The largest n of 0..count for which `fits(n)` (which holds up to some n and not after:
    the words of a text that fit a budget), in log2(count) calls; 0 when none does."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _words_within(words: Sequence[str], tokens: int) -> int:
    """How many of the first `words` fit `tokens`."""
    return longest_prefix(len(words), lambda n: estimate_tokens(" ".join(words[:n])) <= tokens)


def clip_to_tokens(text: str, tokens: int) -> str:
    """Keep the beginning of `text` within about `tokens` tokens: whole lines while they fit
    (a transcript keeps one speaker per line), then the words of the next line that fit."""
    if estimate_tokens(text) <= tokens:
        return text
    kept: list[str] = []
    left = tokens
    for line in text.splitlines():
        cost = estimate_tokens(line)
        if cost <= left:
            kept.append(line)
            left -= cost
            continue
        words = line.split()
        lo = _words_within(words, left)
        if lo:
            kept.append(" ".join(words[:lo]))
        elif words:  # a first word over what is left: text written without spaces
            kept.append(words[0][: _fit_start(words[0], left)])
        break
    return "\n".join(part for part in kept if part)


class OutputFilter(Protocol):
    """A transform of an answer's text as it comes: `feed` takes the next piece of text and
    returns what may be shown of it so far (a filter may hold text back until it knows more),
    `finish` what is left at the end."""

    def feed(self, chunk: str) -> str: ...

    def finish(self) -> str: ...


class AntipromptFilter:
    """Streams model output and stops at the first anti-prompt, even one split across chunks.

    Text that could be the start of an anti-prompt is held back until the next chunk shows
    whether it is one (as LLamaSharp's antiprompt processing does).
    """

    def __init__(self, stop_words: Iterable[str]) -> None:
        self._stops = [w for w in stop_words if w]
        self._pending = ""
        self.stopped = False

    def feed(self, chunk: str) -> str:
        if self.stopped:
            return ""
        self._pending += chunk
        cut = self._first_stop(self._pending)
        if cut is not None:
            out = self._pending[:cut]
            self._pending = ""
            self.stopped = True
            return out
        hold = self._partial_suffix(self._pending)
        out = self._pending[: len(self._pending) - hold]
        self._pending = self._pending[len(out) :]
        return out

    def finish(self) -> str:
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out

    def _first_stop(self, text: str) -> int | None:
        hits = [i for i in (text.find(w) for w in self._stops) if i >= 0]
        return min(hits) if hits else None

    def _partial_suffix(self, text: str) -> int:
        """Length of the longest suffix of `text` that is a proper prefix of a stop word."""
        best = 0
        for word in self._stops:
            for n in range(min(len(word) - 1, len(text)), best, -1):
                if text.endswith(word[:n]):
                    best = n
                    break
        return best


class ResponseFilter:
    """Streaming cleaner for a reply: drops an echoed leading role prefix ("Assistant:"),
    then stops at the first anti-prompt. Works chunk by chunk, so split tokens are handled."""

    def __init__(self, roles: Roles) -> None:
        self._prefix = f"{roles.assistant}:"
        self._head = ""
        self._head_done = False
        self._stops = AntipromptFilter(roles.stop_words())

    @property
    def stopped(self) -> bool:
        return self._stops.stopped

    def feed(self, chunk: str) -> str:
        if self._head_done:
            return self._stops.feed(chunk)
        self._head += chunk
        while True:
            text = self._head.lstrip()
            if text.startswith(self._prefix):
                self._head = text[len(self._prefix) :]
                continue
            if text and self._prefix.startswith(text):
                return ""  # could still become the prefix: wait for more
            if not text:
                return ""
            self._head_done = True
            head, self._head = text, ""
            return self._stops.feed(head)

    def finish(self) -> str:
        if not self._head_done:
            self._head_done = True
            return self._stops.feed(self._head.lstrip()) + self._stops.finish()
        return self._stops.finish()


class Trim:
    """Streams text without its leading and trailing whitespace (str.strip, piece by piece):
    whitespace is held back until text follows it, and dropped at the end."""

    def __init__(self) -> None:
        self._started = False
        self._held = ""

    def feed(self, chunk: str) -> str:
        if not self._started:
            chunk = chunk.lstrip()
            if not chunk:
                return ""
            self._started = True
        text = self._held + chunk
        body = text.rstrip()
        self._held = text[len(body) :]
        return body

    def finish(self) -> str:
        self._held = ""
        return ""


def filter_pieces(pieces: Iterable[Piece], *filters: OutputFilter) -> Iterator[Piece]:
    """`pieces` with their text passed through `filters` in turn, delta by delta (what a filter
    holds back comes out once it is sure of it, or at the end): what has been yielded is never
    taken back. The pieces are read to the end, for the Finish's usage; its stop reason is
    STOP_SEQUENCE when a filter stopped the answer. Closed early (a reader that stops), it
    closes `pieces` too: a streamed answer's connection is let go at once."""
    try:
        for piece in pieces:
            if isinstance(piece, str):
                for output in filters:
                    piece = output.feed(piece)
                if piece:
                    yield piece
                continue
            rest = ""
            for output in filters:
                rest = output.feed(rest) + output.finish()
            if rest:
                yield rest
            if any(getattr(output, "stopped", False) for output in filters):
                piece = piece._replace(stop_reason=STOP_SEQUENCE)
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def clean_pieces(pieces: Iterable[Piece], roles: Roles) -> Iterator[Piece]:
    """A reply's pieces without an echoed role prefix, nothing from the first anti-prompt on,
    and trimmed: their text collected is clean_output of the whole."""
    return filter_pieces(pieces, ResponseFilter(roles), Trim())


def clean_output(chunks: str | Iterable[str], roles: Roles) -> str:
    """Strip an echoed role prefix and everything from the first anti-prompt on."""
    pieces: list[Piece] = [chunks] if isinstance(chunks, str) else list(chunks)
    pieces.append(Finish())
    return "".join(p for p in clean_pieces(pieces, roles) if isinstance(p, str))
