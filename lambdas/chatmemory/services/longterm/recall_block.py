"""Auto-recall's memory block: the lines of the windows and the records the search found, each
scored by `LineWeights`, taken best first while they fit the token budget (services/longterm/
auto_recall.py decides whether there is anything to recall)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from chatmemory.domain import Source
from chatmemory.ports import MemoryDoc, RecordStore
from chatmemory.schema import PROMPT_MEMORY_FOOTER, PROMPT_MEMORY_HEADER, MemoryKind, SourceKind
from chatmemory.services.longterm.auto_recall import LineWeights
from chatmemory.services.longterm.terms import content_stems, stems
from chatmemory.services.prompt import estimate_tokens

MEMORY_HEADER = PROMPT_MEMORY_HEADER
MEMORY_FOOTER = PROMPT_MEMORY_FOOTER


@dataclass
class RecalledItem:
    text: str
    source: Source
    score: float
    docs: list[MemoryDoc] = field(default_factory=list)


def live_documents(memory: RecordStore, owner: str, docs: Sequence[MemoryDoc]) -> list[MemoryDoc]:
    """The documents whose session and record still exist, in one consistent read. A record
    drawn from sessions needs one of them alive (see profile.record_document)."""
    sessions = {d.session_id for d in docs if d.session_id} | {s for d in docs for s in d.sessions}
    records = {d.record_id for d in docs if d.record_id}
    if not sessions and not records:
        return []
    alive_sessions, alive_records = memory.live(owner, sorted(sessions), sorted(records))
    return [
        d
        for d in docs
        if d.of_live_record(alive_records)
        and (d.session_id is None or d.session_id in alive_sessions)
        and (not d.sessions or any(s in alive_sessions for s in d.sessions))
    ]


def _label(doc: MemoryDoc) -> str:
    date = doc.created_at[:10]
    if doc.kind == MemoryKind.OPEN_QUESTION:
        return f"[{date}, open question: not settled then]"
    if doc.kind in (MemoryKind.FACT, MemoryKind.PREFERENCE):
        until = f" until {doc.valid_until[:10]}" if doc.valid_until else ""
        return f"[{date}{until}, {doc.kind}]"
    if doc.kind == MemoryKind.SUMMARY:
        return f"[{date}, summary]"
    return f"[{date}]"


def _source(doc: MemoryDoc, score: float) -> Source:
    if doc.record_id and doc.kind != MemoryKind.SUMMARY:
        return Source(
            kind=SourceKind.RECORD,
            id=doc.record_id,
            title=doc.text[:120],
            date=doc.created_at,
            score=round(score, 4),
        )
    return Source(
        kind=SourceKind.SESSION,
        id=doc.session_id or doc.doc_key,
        title=doc.title,
        date=doc.created_at,
        score=round(score, 4),
    )


@dataclass
class _Piece:
    """A line of a window (`session` set) or a record, worth `score` in the block."""

    text: str
    score: float
    doc: MemoryDoc
    session: str | None = None
    position: float = 0.0


# The message asks when or for how long; a line that says when.
_WHEN = re.compile(r"^\s*(?:when|how long)\b", re.I)
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|last|next|ago|week|weekend|month|year|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|\d{4})\b",
    re.I,
)


def _speaker(line: str) -> str:
    """The speaker label of a transcript line ("Melanie: ..." -> "melanie"), or ""."""
    label, colon, _ = line.partition(":")
    return label.strip().lower() if colon else ""


def _window_lines(ranked: Sequence[tuple[MemoryDoc, float]]) -> dict[str, list[str]]:
    """Each window's non-blank lines, by its key (records and documents are not windows)."""
    return {
        doc.doc_key: [ln for ln in doc.text.splitlines() if ln.strip()]
        for doc, _ in ranked
        if doc.kind == MemoryKind.CHUNK and doc.session_id
    }


def _word_match(ranked: Sequence[tuple[MemoryDoc, float]], query: str) -> Callable[[str], float]:
    """The share of the query's content words a text holds, each weighed by how rare it is
    among the candidates (a name on every line weighs little)."""
    wanted = content_stems(query)
    seen = [stems(doc.text) for doc, _ in ranked]
    rarity = {
        w: math.log((len(ranked) + 1) / (sum(w in words for words in seen) + 0.5)) for w in wanted
    }
    total = sum(rarity.values()) or 1.0

    def words(text: str) -> float:
        return sum(rarity[w] for w in wanted & stems(text)) / total

    return words


# The `length` feature counts a piece's tokens in fifties.
LENGTH_UNIT = 50
_LENGTH = LineWeights._fields.index("length")


def piece_features(
    ranked: Sequence[tuple[MemoryDoc, float]],
    query: str,
    window_lines: dict[str, list[str]] | None = None,
) -> list[tuple[_Piece, tuple[float, ...]]]:
    """The pieces the block is made of, each with its features in `LineWeights`' order: every
    line of the windows once (with the best window holding it) and every record.
    `window_lines` is `_window_lines(ranked)`, when the caller has it already."""
    best = ranked[0][1] if ranked and ranked[0][1] > 0 else 1.0
    if window_lines is None:
        window_lines = _window_lines(ranked)
    # Every window's score for each line it holds, best first (`ranked` is best first).
    held: dict[str, list[float]] = {}
    for doc, score in ranked:
        for line in dict.fromkeys(window_lines.get(doc.doc_key, ())):
            held.setdefault(line, []).append(score)
    words = _word_match(ranked, query)
    lowered = query.lower()
    when = 1.0 if _WHEN.match(query) else 0.0
    out: dict[str, tuple[_Piece, tuple[float, ...]]] = {}
    for doc, score in ranked:
        window = score / best
        if doc.kind != MemoryKind.CHUNK or not doc.session_id:
            text = f"{_label(doc)} {doc.text}"
            length = estimate_tokens(text) / LENGTH_UNIT
            features = (window, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, length, 0.0, 0.0, 0.0)
            out.setdefault(f"\x00{doc.doc_key}", (_Piece(text, score, doc), features))
            continue
        lines = window_lines[doc.doc_key]
        speakers = {_speaker(ln) for ln in lines} - {""}
        matched = [words(ln) for ln in lines]
        for i, (position, line) in enumerate(_placed(doc, lines)):
            if line in out:  # `ranked` is best first: the first window holding a line is its best
                continue
            speaker = _speaker(line)
            scores = held[line]
            features = (
                window,
                scores[1] / best if len(scores) > 1 else 0.0,
                matched[i],
                matched[i - 1] if i else 0.0,
                matched[i + 1] if i + 1 < len(lines) else 0.0,
                1.0 if speaker and speaker in lowered else 0.0,
                1.0 if any(s in lowered for s in speakers - {speaker}) else 0.0,
                0.0,
                estimate_tokens(line) / LENGTH_UNIT,
                1.0 if line.rstrip().endswith("?") else 0.0,
                when if _TIME.search(line) else 0.0,
                when,
            )
            out[line] = (_Piece(line, score, doc, doc.session_id, position), features)
    return list(out.values())


def build_block(
    ranked: Sequence[tuple[MemoryDoc, float]],
    budget: int,
    query: str = "",
    weights: LineWeights | None = None,
    known: Sequence[str] = (),
    cost_exponent: float = 0.0,
) -> tuple[str, list[RecalledItem]]:
    """The memory block within `budget` tokens (header included), filled piece by piece.

    Pieces are the lines of the windows and the records; each is worth the sum of `weights`
    times its features (`piece_features`), or without weights its window's score, and they go
    in best first while they fit. So the block holds the lines most likely to answer from several
    windows rather than the best window whole (windows are about 230 tokens on LoCoMo, the
    budget 400: whole windows left half of it unused or spent on the second-best window's
    least useful lines). The lines of one session form one dated excerpt in transcript order,
    each line once; "…" marks where lines between two of them were left out. A record whose
    content words a piece already taken holds is left out (a fact drawn from a line there), and
    so is a piece whose every content word one of the `known` texts holds (the profile block's
    records, in the prompt already: the line they were drawn from says nothing more).

    With weights, a piece's place in that order is also its price: its score less
    `cost_exponent` times the log of its tokens, the odds of the piece per token raised to
    that power (0: the score alone). The budget holds five or six of LoCoMo's lines, and a
    short line that is nearly as likely leaves room for another."""
    window_lines = _window_lines(ranked)
    scored = piece_features(ranked, query, window_lines)
    if weights is not None:
        coefficients = tuple(weights)
        for piece, features in scored:
            piece.score = sum(w * f for w, f in zip(coefficients, features, strict=True))
            tokens = round(features[_LENGTH] * LENGTH_UNIT)  # its tokens, counted once
            piece.score -= cost_exponent * math.log(max(tokens, 1))
    block = _Block(budget - estimate_tokens(MEMORY_HEADER) - estimate_tokens(MEMORY_FOOTER))
    for lines in window_lines.values():
        block.adjacent.update(zip(lines, lines[1:], strict=False))
    prompted = [words for words in map(content_stems, known) if words]
    # Stable: equal scores keep the search's order.
    for piece in sorted((piece for piece, _ in scored), key=lambda p: -p.score):
        if block.left <= 8:
            break
        said = content_stems(_spoken(piece.text))
        if said and any(said <= words for words in prompted):
            continue
        if piece.session is None:
            block.take_record(piece)
        else:
            block.take_line(piece, piece.session)
    if not block.items:
        return "", []
    items = block.items
    return "\n".join([MEMORY_HEADER, *(item.text for item in items), MEMORY_FOOTER]), items


@dataclass
class _Block:
    """The block as it fills: `left` tokens to spend, one item a record or a session's excerpt."""

    left: int
    items: list[RecalledItem] = field(default_factory=list)
    excerpts: dict[str, tuple[RecalledItem, list[_Piece]]] = field(default_factory=dict)
    # Lines that follow each other in a window: no "…" between them in an excerpt.
    adjacent: set[tuple[str, str]] = field(default_factory=set)
    # The words of each piece taken: a record whose every content word one of them already
    # holds (a fact drawn from a line in the block, or repeated) says nothing new.
    held: list[set[str]] = field(default_factory=list)

    def take_record(self, piece: _Piece) -> None:
        said = content_stems(piece.doc.text)
        if said and any(said <= words for words in self.held):
            return
        cost = estimate_tokens(piece.text)
        if cost <= self.left:
            source = _source(piece.doc, piece.score)
            self.items.append(RecalledItem(piece.text, source, piece.score, [piece.doc]))
            self.left -= cost
            self.held.append(said)

    def take_line(self, piece: _Piece, session: str) -> None:
        excerpt, chosen = self.excerpts.get(session, (None, []))
        text = _excerpt([*chosen, piece], self.adjacent)
        cost = estimate_tokens(text) - (estimate_tokens(excerpt.text) if excerpt else 0)
        if cost > self.left:
            return
        self.left -= cost
        if excerpt is None:
            excerpt = RecalledItem(text, _source(piece.doc, piece.score), piece.score)
            self.items.append(excerpt)
            self.excerpts[session] = (excerpt, chosen)
        excerpt.text = text
        chosen.append(piece)
        self.held.append(stems(piece.text))
        if piece.doc not in excerpt.docs:
            excerpt.docs.append(piece.doc)


def _spoken(line: str) -> str:
    """A transcript line without its speaker label, a record's without its label."""
    if line.startswith("["):
        return line.partition("] ")[2]
    return line.partition(":")[2] if _speaker(line) else line


def _placed(doc: MemoryDoc, lines: list[str]) -> list[tuple[float, str]]:
    """Each line of a window with its place in the session: the window's turns spread evenly
    over its lines (two lines a turn), enough to put lines of overlapping windows in order."""
    first = doc.turn_from or 0
    span = (doc.turn_to or first) - first + 1
    return [(first + i * span / len(lines), line) for i, line in enumerate(lines)]


def _excerpt(pieces: Sequence[_Piece], adjacent: set[tuple[str, str]]) -> str:
    """Lines of one session as one dated excerpt, in transcript order, "…" over a gap."""
    ordered = sorted(pieces, key=lambda p: p.position)
    lines = [ordered[0].text]
    for before, line in zip(ordered, ordered[1:], strict=False):
        if (before.text, line.text) not in adjacent:
            lines.append("…")
        lines.append(line.text)
    return f"{_label(ordered[0].doc)} " + "\n".join(lines)
