"""Intent routing: `/past`, `/verified`, `/remember` and `/human` prefixes, and an optional
few-shot classifier (which only ever chooses between chat, past and verified)."""

from __future__ import annotations

import re
from typing import NamedTuple

from chatmemory.errors import BadRequest, ChatMemoryError
from chatmemory.ports import TextGenerator
from chatmemory.schema import Intent

_PREFIX = re.compile(r"^\s*/(past|verified|remember|human)(?=\s|$)\s*", re.IGNORECASE)
_CLASSIFIED = frozenset({Intent.CHAT, Intent.PAST, Intent.VERIFIED})

CLASSIFIER_PROMPT = """Classify the user's message into one of: chat, past, verified.
past: the user asks about an earlier conversation with the assistant.
verified: the user asks a factual question that must be answered from verified documents.
chat: anything else.

Message: What did we talk about last week?
Label: past
Message: Remind me what restaurant I mentioned before.
Label: past
Message: What does the policy document say about refunds?
Label: verified
Message: According to the manual, how do I reset the device?
Label: verified
Message: Hi, how are you today?
Label: chat
Message: Write a haiku about autumn.
Label: chat
Message: {message}
Label:"""


class Routed(NamedTuple):
    intent: Intent
    text: str
    # "prefix" | "classifier" | "default"
    routed_by: str


def parse_prefix(content: str) -> Routed:
    """`/past q` -> past, `/verified q` -> verified, `/remember text` -> remember, `/human
    [note]` -> human (a person is asked for; the note is optional); the prefix never reaches a
    model."""
    match = _PREFIX.match(content)
    if not match:
        return Routed(Intent.CHAT, content.strip(), "default")
    intent = Intent(match.group(1).lower())
    text = content[match.end() :].strip()
    if not text and intent != Intent.HUMAN:
        what = "what to remember" if intent == Intent.REMEMBER else "a question"
        raise BadRequest(f"/{intent} needs {what} after it")
    return Routed(intent, text, "prefix")


def classify(message: str, generator: TextGenerator) -> Intent:
    """Ask the text model for a label; anything unexpected (or a model failure) means chat."""
    try:
        out = generator.generate(CLASSIFIER_PROMPT.format(message=message), max_new_tokens=4)
    except ChatMemoryError:
        return Intent.CHAT
    words = re.findall(r"[a-z]+", out.text.lower())
    return Intent(words[0]) if words and words[0] in _CLASSIFIED else Intent.CHAT


def route(content: str, *, generator: TextGenerator | None = None) -> Routed:
    routed = parse_prefix(content)
    if routed.routed_by == "prefix" or generator is None:
        return routed
    return Routed(classify(routed.text, generator), routed.text, "classifier")
