"""The profile block: what the user has told us about themselves that lasts, in every chat
prompt, within a token budget of its own.

A question that needs a fact rarely shares its words or its meaning with it ("What should I
avoid cooking?" and "I'm allergic to peanuts" are 0.15 apart by all-MiniLM-L6-v2), so a
similarity gate would hide the fact exactly when it matters. The systems people use keep what
they know of the user in every prompt (ChatGPT's saved memories, Letta's core memory blocks);
so does this one, as constant context: the user's lasting facts and preferences
(MemoryRecord.in_profile), in their words, one per line.

What survives the budget is decided by the profile index's order (MemoryRecord.profile_rank):
health and safety first (allergies, diets, conditions, medicines), then identity and people,
standing preferences, the rest; within each the newest said first (saying a fact again makes it
new). What does not fit goes through auto-recall's similarity gate with episodic memory
(services/longterm/auto_recall.py leaves out what the block holds).

Per turn: one Query of the sparse profile index (the first `candidates` records in its order,
only the attributes the block needs) and one consistent BatchGetItem that drops what was
deleted meanwhile (the index is read eventually; a record being deleted, or drawn from sessions
that are all deleted, is never shown), made last before the prompt is built, after auto-recall's
search. If the store cannot be read the turn goes on without the block (`degraded`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from chatmemory.domain import MemoryRecord, Source
from chatmemory.errors import ChatMemoryError
from chatmemory.ports import RecordStore
from chatmemory.schema import (
    PROMPT_PROFILE_FOOTER,
    PROMPT_PROFILE_HEADER,
    RecordOrigin,
    SourceKind,
)
from chatmemory.services.prompt import estimate_tokens, longest_prefix

# A profile source's title: enough to recognise the record; every turn stores its sources.
TITLE_CHARS = 80


class ProfileBlockPolicy(NamedTuple):
    """The knobs of the profile block (PROFILE_TOKEN_BUDGET; 0 turns it off)."""

    token_budget: int = 1000
    # Records read from the profile index per turn: more than the largest budget can hold
    # (a line is 6 tokens at least).
    candidates: int = 80


@dataclass
class ProfileBlock:
    """What the prompt holds of the profile (nothing when `text` is empty) and what it left out."""

    text: str = ""
    records: list[MemoryRecord] = field(default_factory=list)
    tokens: int = 0
    # Profile records read that did not fit the budget (auto-recall may still bring them).
    overflow: int = 0
    degraded: bool = False

    @property
    def sources(self) -> list[Source]:
        """One source per record the prompt holds: the turn names every one of them."""
        return [
            Source(
                kind=SourceKind.PROFILE,
                id=r.record_id,
                title=r.text[:TITLE_CHARS],
                date=r.created_at,
            )
            for r in self.records
        ]


# A line of the block at most: a record in the user's words can run on ("I've been a wheelchair
# user ever since the car accident when I was twenty-three, which honestly I've made my peace
# with, it's just part of how I get around now": 44 tokens); its first words say the fact, the
# whole record stays on the page and in search, and the budget holds more of the user's facts.
LINE_TOKENS = 24


def line(record: MemoryRecord) -> str:
    """The record's line in the block: its words, or as many of its first words as fit
    LINE_TOKENS with "…" (one word at least; a record of one word is as it is)."""
    words = record.text.split()
    whole = f"- {' '.join(words)}"
    if len(words) < 2 or estimate_tokens(whole) <= LINE_TOKENS:
        return whole

    def cut(n: int) -> str:
        return f"- {' '.join(words[:n]).rstrip(',;:')}…"

    fits = longest_prefix(len(words) - 1, lambda n: estimate_tokens(cut(n)) <= LINE_TOKENS)
    return cut(max(fits, 1))


class Candidates(NamedTuple):
    """The records that fit the block, as the profile index has them (read eventually): what
    the prompt will hold once `checked` confirms they are live."""

    owner: str
    chosen: list[MemoryRecord]
    overflow: int = 0
    degraded: bool = False
    # Each chosen record's line (`line`), made once for the turn.
    lines: tuple[str, ...] = ()

    @property
    def held(self) -> dict[str, str]:
        """What the block will hold: record id -> its text as the prompt has it (cut short at
        LINE_TOKENS): auto-recall leaves those records out, and the lines that say only that."""
        return {
            r.record_id: text.removeprefix("- ")
            for r, text in zip(self.chosen, self.lines, strict=True)
        }


def candidates(
    owner: str, *, records: RecordStore, policy: ProfileBlockPolicy, budget: int
) -> Candidates:
    """The records of the profile index that fit `budget`, best first (one Query)."""
    if budget <= 0 or policy.token_budget <= 0:
        return Candidates(owner, [])
    try:
        found = records.profile_records(owner, policy.candidates)
    except ChatMemoryError as failure:
        if failure.status < 500:
            raise
        return Candidates(owner, [], degraded=True)
    fitting = _fitting(found, budget)
    chosen = [record for record, _ in fitting]
    return Candidates(owner, chosen, len(found) - len(chosen), lines=tuple(t for _, t in fitting))


def checked(found: Candidates, records: RecordStore) -> ProfileBlock:
    """The block of the candidates still live (one consistent read). The turn calls this last
    before its prompt, after any other search, so that a delete that returned meanwhile is
    seen: nothing of it reaches the model."""
    if found.degraded:
        return ProfileBlock(degraded=True)
    try:
        alive = _live(records, found.owner, found.chosen)
    except ChatMemoryError as failure:
        if failure.status < 500:
            raise
        return ProfileBlock(degraded=True)
    pairs = zip(found.chosen, found.lines, strict=True)
    kept = [(r, text) for r, text in pairs if r.record_id in alive]
    if not kept:
        return ProfileBlock(overflow=found.overflow)
    text = "\n".join([PROMPT_PROFILE_HEADER, *(t for _, t in kept), PROMPT_PROFILE_FOOTER])
    return ProfileBlock(text, [r for r, _ in kept], estimate_tokens(text), found.overflow)


def _fitting(candidates: Sequence[MemoryRecord], budget: int) -> list[tuple[MemoryRecord, str]]:
    """The candidates, best first, that fit the budget (a long one that does not fit leaves
    room for shorter ones after it), each with its line."""
    left = budget - estimate_tokens(PROMPT_PROFILE_HEADER) - estimate_tokens(PROMPT_PROFILE_FOOTER)
    chosen: list[tuple[MemoryRecord, str]] = []
    seen: set[str] = set()
    for record in candidates:
        said = " ".join(record.text.lower().split())
        if said in seen:
            continue
        text = line(record)
        cost = estimate_tokens(text)
        if cost > left:
            continue
        chosen.append((record, text))
        seen.add(said)
        left -= cost
    return chosen


def _live(records: RecordStore, owner: str, chosen: Sequence[MemoryRecord]) -> set[str]:
    """The ids of the chosen records that are visible now (services/profile/profile.
    visible_records' rule, in one consistent read): not deleted, and, when drawn from sessions,
    with one of the sessions that said their words still visible."""
    if not chosen:
        return set()
    drawn = {
        r.record_id: r.wording_sessions
        for r in chosen
        if r.provenance and r.origin == RecordOrigin.EXTRACTED
    }
    sessions = sorted({s for said_in in drawn.values() for s in said_in})
    live_sessions, live_records = records.live(owner, sessions, [r.record_id for r in chosen])
    return {
        r.record_id
        for r in chosen
        if r.record_id in live_records
        and (r.record_id not in drawn or any(s in live_sessions for s in drawn[r.record_id]))
    }
