"""Ingestion of verified documents: chunk text/markdown, embed, index as shared passages."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chatmemory.ports import Embedder, LongTermIndex, MemoryDoc
from chatmemory.schema import PASSAGE_INDEX, SHARED_OWNER, MemoryKind, passage_doc_key
from chatmemory.services.background.consolidation import embed_documents


@dataclass(frozen=True)
class SourceDocument:
    doc_id: str
    text: str
    source: str = ""
    title: str = ""


# A passage is at most this many characters as well as max_words words. English passages meet
# the word bound first (120 words are ~700 characters); a paragraph written without spaces
# (Chinese, Japanese, Thai) or one unbroken run (a URL, base64) would otherwise be one "word" and
# one passage of any length. 1,000 CJK characters are about 1,000 tokens: every supported
# embedder takes them (512-token models embed their start).
MAX_PASSAGE_CHARS = 1000
# A run longer than this is cut into pieces of it, so long runs are windowed with overlap too.
_PIECE_CHARS = 50

# (text, joined to the previous unit without a space): a word, or a piece of a long run.
_Unit = tuple[str, bool]


def chunk_text(
    text: str,
    *,
    max_words: int = 120,
    overlap_words: int = 20,
    max_chars: int = MAX_PASSAGE_CHARS,
) -> list[str]:
    """Passages of whole paragraphs up to max_words words and max_chars characters; a longer
    paragraph is split in windows that overlap (overlap_words, and at most a quarter of
    max_chars), so a fact on a boundary stays whole in one passage. A run of text without
    spaces is cut between characters and never given a space it did not have."""
    piece = max(1, min(_PIECE_CHARS, max_chars // 4))
    limits = _Bounds(max_words, max_chars)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    passages: list[str] = []
    current: list[_Unit] = []
    for paragraph in paragraphs:
        units = _units(paragraph, piece)
        if not limits.fit(units):
            if current:
                passages.append(_join(current))
                current = []
            passages.extend(_windows(units, limits, overlap_words, max_chars // 4))
            continue
        if current and not limits.fit([*current, *units]):
            passages.append(_join(current))
            current = []
        current += units
    if current:
        passages.append(_join(current))
    return passages


class _Bounds:
    def __init__(self, words: int, chars: int) -> None:
        self.words, self.chars = words, chars

    def fit(self, units: list[_Unit]) -> bool:
        return len(units) <= self.words and len(_join(units)) <= self.chars


def _units(paragraph: str, piece: int) -> list[_Unit]:
    units: list[_Unit] = []
    for word in paragraph.split():
        for start in range(0, len(word), piece):
            units.append((word[start : start + piece], start > 0))
    return units


def _join(units: list[_Unit]) -> str:
    return "".join(text if glued or n == 0 else f" {text}" for n, (text, glued) in enumerate(units))


def _windows(
    units: list[_Unit], limits: _Bounds, overlap_words: int, overlap_chars: int
) -> list[str]:
    """Windows of `units` within `limits`, each starting up to `overlap_words` units (and
    `overlap_chars` characters) before the previous one ended."""
    passages: list[str] = []
    start = 0
    while True:
        end = start + 1  # a unit is never longer than a passage
        chars = len(units[start][0])
        while end < len(units) and end - start < limits.words:
            text, glued = units[end]
            if chars + len(text) + (not glued) > limits.chars:
                break
            chars += len(text) + (not glued)
            end += 1
        window = units[start:end]
        passages.append(_join([(window[0][0], False), *window[1:]]))
        if end >= len(units):
            return passages
        back = 0
        while (
            back < overlap_words
            and end - back - 1 > start
            and len(_join(units[end - back - 1 : end])) <= overlap_chars
        ):
            back += 1
        start = end - back


def ingest_documents(
    documents: Iterable[SourceDocument],
    *,
    embedder: Embedder,
    index: LongTermIndex,
    max_words: int = 120,
    max_chars: int = MAX_PASSAGE_CHARS,
) -> int:
    """Index every document's passages (ids `<doc_id>#p<n>`, stable across re-ingestion)."""
    docs: list[MemoryDoc] = []
    for document in documents:
        title = document.title or _title(document.text) or document.doc_id
        passages = chunk_text(document.text, max_words=max_words, max_chars=max_chars)
        for n, passage in enumerate(passages, start=1):
            docs.append(
                MemoryDoc(
                    doc_key=passage_doc_key(document.doc_id, n),
                    user_id=SHARED_OWNER,
                    kind=MemoryKind.PASSAGE,
                    text=passage,
                    created_at="1970-01-01T00:00:00.000Z",
                    title=title,
                    doc_id=document.doc_id,
                    passage_id=f"p{n}",
                    source=document.source or document.doc_id,
                )
            )
    embed_documents(embedder, docs)
    index.upsert(PASSAGE_INDEX, docs)
    # A document re-ingested shorter than before must not keep answering with its old tail.
    for doc_id in dict.fromkeys(d.doc_id for d in docs if d.doc_id):
        index.delete_document(doc_id, keep=[d.doc_key for d in docs if d.doc_id == doc_id])
    return len(docs)


def _title(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return ""
