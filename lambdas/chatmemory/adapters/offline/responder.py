"""A plainly labelled stand-in for a language model, so local mode runs with no model at all.

It does not pretend to understand: it says it is offline, echoes the message and shows what
short-term memory put in front of it, which is what a person trying local mode wants to see.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatmemory.ports import Generation
from chatmemory.schema import TEXT_STOPWORDS

LABEL = "[offline responder]"
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s?(.*)$")


class OfflineResponder:
    name = "offline-responder"
    context_tokens = 512

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        lines = [line for line in prompt.splitlines() if line.strip()]
        # Grounded answers, summaries and labels first: their last line ends with ":" too.
        if lines and lines[-1] in ("Answer:", "Summary:", "Label:"):
            return Generation(self._task_reply(lines), self.name)
        if len(lines) >= 2 and lines[-1].endswith(":"):
            assistant = lines[-1][:-1]
            user_match = _SPEAKER.match(lines[-2])
            user = user_match.group(1) if user_match else "User"
            message = user_match.group(2) if user_match else lines[-2]
            spoken = (m for m in map(_SPEAKER.match, lines[:-2]) if m and m.group(1) == user)
            history = [m.group(2) for m in spoken]
            summary = next((x for x in lines if x.startswith("Summary of the earlier")), "")
            return Generation(self._chat_reply(message, history, summary, assistant), self.name)
        return Generation(f"{LABEL} No language model is configured.", self.name)

    @staticmethod
    def _chat_reply(message: str, history: list[str], summary: str, assistant: str) -> str:
        parts = [f"{LABEL} No language model is configured, so I can only show what I remember."]
        parts.append(f'You said: "{message}".')
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

    @staticmethod
    def _task_reply(lines: list[str]) -> str:
        if lines[-1] == "Label:":
            return "chat"
        if lines[-1] == "Summary:":
            return " ".join(lines[1:-1])[:600]
        return _grounded_reply(lines)


_BLOCK = re.compile(r"^\[([^\]]{1,80})\]\s*(.*)$")
_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_COMMON = frozenset(TEXT_STOPWORDS)


def _terms(text: str) -> set[str]:
    """Content words, crudely singular ("tomatoes" and "tomato" meet)."""
    words = set(_WORD.findall(text.lower())) - _COMMON
    return {re.sub(r"(?<=\w\w\w)(es|s)$", "", w) for w in words}


def _grounded_reply(lines: list[str]) -> str:
    """An answer from retrieved notes or passages without a language model: the sentences that
    share the most words with the question, with where they came from. The responder's own
    earlier replies in the notes are skipped: they quote, they do not inform."""
    asked = next((line for line in lines if line.startswith("Question:")), "")
    wanted = _terms(asked[len("Question:") :])
    scored: list[tuple[float, int, str, str]] = []
    where = ""
    for line in lines[1:]:
        if line.startswith("Question:"):
            break
        block = _BLOCK.match(line)
        if block:
            where, line = block.group(1), block.group(2)
        if LABEL in line:
            continue
        for sentence in _SENTENCE.split(line):
            words = _terms(sentence)
            overlap = len(words & wanted)
            if overlap:
                scored.append((overlap / (len(words) ** 0.5), -len(scored), where, sentence))
    if not scored:
        return f"{LABEL} I found notes, but none of them mentions what you asked."
    # A session's summary, opening and transcript windows repeat its sentences: quote each once.
    best: dict[str, str] = {}
    for _, _, where_from, sentence in sorted(scored, reverse=True):
        best.setdefault(" ".join(sentence.split()), where_from)
        if len(best) == 2:
            break
    quotes = " ".join(f"[{w}] {s}" if w else s for s, w in best.items())
    return f"{LABEL} Without a language model I can only quote what I found: {quotes}"[:800]
